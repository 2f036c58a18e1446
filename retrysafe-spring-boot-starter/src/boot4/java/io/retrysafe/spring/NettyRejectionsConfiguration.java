package io.retrysafe.spring;

import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.webflux.WebFluxIdempotency;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.reactor.netty.NettyServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * Reactor Netty: what its decoder refuses on protected routes is the filter's problem, not an empty
 * {@code 400} ({@link NettyRejections}). Spring Boot 4 names Netty's server customizer in its own module.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(name = {"reactor.netty.http.server.HttpServer",
        "org.springframework.boot.reactor.netty.NettyServerCustomizer"})
class NettyRejectionsConfiguration {
    @Bean
    NettyServerCustomizer retrySafeNettyRejections(WebFluxIdempotency config, AsyncRetrySafe engine,
            Environment environment) {
        return new NettyRejections(config, engine.listener(), environment.getProperty("spring.webflux.base-path"))
                ::install;
    }
}
