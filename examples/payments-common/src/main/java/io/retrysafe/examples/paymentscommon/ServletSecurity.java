package io.retrysafe.examples.paymentscommon;

import io.retrysafe.servlet.Problem;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.SecurityFilterChain;

/**
 * The servlet payments services' security: HTTP Basic with two demo users, alice:alice-secret and
 * bob:bob-secret. The authenticated principal is the scope of every key (the starter's default): alice's
 * key never replays bob's answer.
 */
public final class ServletSecurity {

    private ServletSecurity() {
    }

    /** Every path but {@code openPaths} needs a user; no session, no cookie, so no CSRF token either. */
    public static SecurityFilterChain httpBasic(HttpSecurity http, String... openPaths) throws Exception {
        AuthenticationEntryPoint unauthenticated = (request, response, e) -> {
            response.setHeader("WWW-Authenticate", "Basic realm=\"payments\"");
            Problem.UNAUTHENTICATED.send(response, "this service needs HTTP Basic credentials", null, null);
        };
        return http
                .authorizeHttpRequests(a -> a.requestMatchers(openPaths).permitAll().anyRequest().authenticated())
                .httpBasic(b -> b.authenticationEntryPoint(unauthenticated))
                .exceptionHandling(e -> e.authenticationEntryPoint(unauthenticated))
                .sessionManagement(s -> s.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .csrf(c -> c.disable())
                .build();
    }

    /**
     * The demo users. {@code {noop}} keeps a password check cheap, so a load test measures payments, not
     * BCrypt; a real service authenticates against its identity provider.
     */
    public static UserDetailsService demoUsers() {
        InMemoryUserDetailsManager manager = new InMemoryUserDetailsManager(
                User.withUsername("alice").password("{noop}alice-secret").roles("CUSTOMER").build(),
                User.withUsername("bob").password("{noop}bob-secret").roles("CUSTOMER").build());
        // Only the lookup: a bean that can also update passwords makes Spring re-encode them with
        // BCrypt at the first login, and every request then pays for a BCrypt check.
        return manager::loadUserByUsername;
    }
}
