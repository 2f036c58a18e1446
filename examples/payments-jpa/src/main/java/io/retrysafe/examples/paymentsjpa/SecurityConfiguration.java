package io.retrysafe.examples.paymentsjpa;

import io.retrysafe.examples.paymentscommon.ServletSecurity;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.UserDetailsService;
import org.springframework.security.web.SecurityFilterChain;

/** HTTP Basic with the demo users alice and bob ({@link ServletSecurity}): the principal scopes every key. */
@Configuration(proxyBeanMethods = false)
class SecurityConfiguration {

    @Bean
    SecurityFilterChain securityFilterChain(HttpSecurity http) throws Exception {
        return ServletSecurity.httpBasic(http, "/error");
    }

    @Bean
    UserDetailsService users() {
        return ServletSecurity.demoUsers();
    }
}
