package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.ServletSecurity;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.web.SecurityFilterChain;

/**
 * HTTP Basic with two demo users ({@link ServletSecurity}). The authenticated principal is the scope of
 * every {@code Idempotency-Key} (the starter's default): alice's key never replays bob's answer.
 * Health, Prometheus metrics and the idempotency policy (how long a key protects a payment) are open;
 * everything else needs a user.
 */
@Configuration(proxyBeanMethods = false)
class SecurityConfiguration {

    @Bean
    SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
        return ServletSecurity.httpBasic(http, "/actuator/health", "/actuator/health/**", "/actuator/prometheus",
                "/actuator/idempotency", "/error");
    }

    @Bean
    UserDetailsService users() {
        return ServletSecurity.demoUsers();
    }
}
