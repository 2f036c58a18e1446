package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.ProblemType;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatusCode;
import org.springframework.security.authentication.ReactiveAuthenticationManager;
import org.springframework.security.authentication.UserDetailsRepositoryReactiveAuthenticationManager;
import org.springframework.security.config.web.server.ServerHttpSecurity;
import org.springframework.security.core.userdetails.MapReactiveUserDetailsService;
import org.springframework.security.core.userdetails.ReactiveUserDetailsService;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.crypto.factory.PasswordEncoderFactories;
import org.springframework.security.crypto.password.PasswordEncoder;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.security.web.server.ServerAuthenticationEntryPoint;
import org.springframework.security.web.server.context.NoOpServerSecurityContextRepository;
import reactor.core.publisher.Mono;

/**
 * HTTP Basic with the two demo users of the servlet example. The authenticated principal is the scope
 * of every {@code Idempotency-Key}: alice's key never replays bob's answer. Health is open, for load
 * balancers and orchestrators; everything else needs a user.
 */
@Configuration(proxyBeanMethods = false)
class SecurityConfiguration {

    @Bean
    SecurityWebFilterChain securityWebFilterChain(ServerHttpSecurity http) {
        HttpAnswer problem = ProblemType.UNAUTHENTICATED.answer("this service needs HTTP Basic credentials", null,
                null);
        ServerAuthenticationEntryPoint unauthenticated = (exchange, e) -> {
            var response = exchange.getResponse();
            response.setStatusCode(HttpStatusCode.valueOf(problem.status()));
            problem.headers().forEach((name, values) -> response.getHeaders().put(name, values));
            response.getHeaders().set("WWW-Authenticate", "Basic realm=\"payments\"");
            return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(problem.body())));
        };
        return http
                .authorizeExchange(a -> a.pathMatchers("/actuator/health", "/actuator/health/**").permitAll()
                        .anyExchange().authenticated())
                .httpBasic(b -> b.authenticationEntryPoint(unauthenticated))
                .exceptionHandling(e -> e.authenticationEntryPoint(unauthenticated))
                // An API for programs: no session, no cookie, so no CSRF token either.
                .securityContextRepository(NoOpServerSecurityContextRepository.getInstance())
                .csrf(ServerHttpSecurity.CsrfSpec::disable)
                .build();
    }

    /**
     * Demo users. {@code {noop}} keeps a password check cheap, so a load test measures payments, not
     * BCrypt; a real service authenticates against its identity provider.
     */
    /**
     * The users' check, with an encoder that never asks to upgrade a password: Spring Security's
     * reactive check encodes the presented password with BCrypt on every login whose stored encoding
     * could be upgraded (as {@code {noop}} can), even where nothing stores the result, and that
     * BCrypt (about 70 ms of CPU) would be most of what a payment costs here.
     */
    @Bean
    ReactiveAuthenticationManager authenticationManager(ReactiveUserDetailsService users) {
        PasswordEncoder encoders = PasswordEncoderFactories.createDelegatingPasswordEncoder();
        UserDetailsRepositoryReactiveAuthenticationManager manager =
                new UserDetailsRepositoryReactiveAuthenticationManager(users);
        manager.setPasswordEncoder(new PasswordEncoder() {
            @Override
            public String encode(CharSequence raw) {
                return encoders.encode(raw);
            }

            @Override
            public boolean matches(CharSequence raw, String encoded) {
                return encoders.matches(raw, encoded);
            }
        });
        return manager;
    }

    @Bean
    ReactiveUserDetailsService users() {
        return new MapReactiveUserDetailsService(
                User.withUsername("alice").password("{noop}alice-secret").roles("CUSTOMER").build(),
                User.withUsername("bob").password("{noop}bob-secret").roles("CUSTOMER").build());
    }
}
