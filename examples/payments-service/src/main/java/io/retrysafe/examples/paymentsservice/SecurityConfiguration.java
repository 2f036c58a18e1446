package io.retrysafe.examples.paymentsservice;

import io.retrysafe.servlet.Problem;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.SecurityFilterChain;

/**
 * HTTP Basic with two demo users. The authenticated principal is the scope of every
 * {@code Idempotency-Key} (the starter's default): alice's key never replays bob's answer.
 * Health, Prometheus metrics and the idempotency policy (how long a key protects a payment) are open;
 * everything else needs a user.
 */
@Configuration(proxyBeanMethods = false)
class SecurityConfiguration {

    @Bean
    SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
        AuthenticationEntryPoint unauthenticated = (request, response, e) -> {
            response.setHeader("WWW-Authenticate", "Basic realm=\"payments\"");
            Problem.UNAUTHENTICATED.send(response, "this service needs HTTP Basic credentials", null, null);
        };
        return http
                .authorizeHttpRequests(a -> a
                        .requestMatchers("/actuator/health", "/actuator/health/**", "/actuator/prometheus",
                                "/actuator/idempotency", "/error")
                        .permitAll()
                        .anyRequest().authenticated())
                .httpBasic(b -> b.authenticationEntryPoint(unauthenticated))
                .exceptionHandling(e -> e.authenticationEntryPoint(unauthenticated))
                // An API for programs: no session, no cookie, so no CSRF token either.
                .sessionManagement(s -> s.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .csrf(c -> c.disable())
                .build();
    }

    /**
     * Demo users. {@code {noop}} keeps a password check cheap, so a load test measures payments, not
     * BCrypt; a real service authenticates against its identity provider.
     */
    @Bean
    UserDetailsService users() {
        InMemoryUserDetailsManager manager = new InMemoryUserDetailsManager(
                User.withUsername("alice").password("{noop}alice-secret").roles("CUSTOMER").build(),
                User.withUsername("bob").password("{noop}bob-secret").roles("CUSTOMER").build());
        // Only the lookup: a bean that can also update passwords makes Spring re-encode them with
        // BCrypt at the first login, and every request then pays for a BCrypt check.
        return manager::loadUserByUsername;
    }
}
