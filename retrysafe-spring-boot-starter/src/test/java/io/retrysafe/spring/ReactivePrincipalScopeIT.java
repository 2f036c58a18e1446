package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.security.config.annotation.web.reactive.EnableWebFluxSecurity;
import org.springframework.security.config.web.server.ServerHttpSecurity;
import org.springframework.security.core.userdetails.MapReactiveUserDetailsService;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.web.server.SecurityWebFilterChain;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * A reactive application with Spring Security and no scope setting, served by Reactor Netty: the starter's
 * WebFlux filter runs after Spring Security's, so keys belong to the authenticated caller by default; one
 * caller's key never replays another's answer.
 */
@Tag("spring-security")
class ReactivePrincipalScopeIT {

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Configuration(proxyBeanMethods = false)
    @EnableWebFluxSecurity
    static class App {
        final AtomicInteger runs = new AtomicInteger();

        @Bean
        SecurityWebFilterChain security(ServerHttpSecurity http) {
            return http.authorizeExchange(e -> e.anyExchange().authenticated()).httpBasic(b -> { })
                    .csrf(ServerHttpSecurity.CsrfSpec::disable).build();
        }

        @Bean
        MapReactiveUserDetailsService users() {
            return new MapReactiveUserDetailsService(
                    User.withUsername("alice").password("{noop}alice-secret").roles("USER").build(),
                    User.withUsername("bob").password("{noop}bob-secret").roles("USER").build());
        }

        @Bean
        RouterFunction<ServerResponse> payments() {
            return RouterFunctions.route().POST("/payments", request -> request.principal()
                    .flatMap(p -> ServerResponse.status(201).bodyValue(p.getName() + " run " + runs.incrementAndGet())))
                    .build();
        }
    }

    @Test
    void keysBelongToTheAuthenticatedCallerByDefault() {
        new ReactiveWebApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, BootLine.WEBFLUX, BootLine.HTTP_HANDLER,
                        RetrySafeAutoConfiguration.class, RetrySafeWebAutoConfiguration.class,
                        RetrySafeReactiveAutoConfiguration.class))
                .withUserConfiguration(App.class)
                .withPropertyValues("retrysafe.http.routes[0].method=POST", "retrysafe.http.routes[0].pattern=/payments")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    DisposableServer server = HttpServer.create().host("127.0.0.1").port(0)
                            .handle(new ReactorHttpHandlerAdapter(context.getBean(HttpHandler.class))).bindNow();
                    try {
                        String base = "http://127.0.0.1:" + server.port();
                        String key = UUID.randomUUID().toString();
                        HttpResponse<String> alice = post(base, key, "alice:alice-secret");
                        assertThat(alice.statusCode()).isEqualTo(201);
                        assertThat(alice.body()).isEqualTo("alice run 1");

                        HttpResponse<String> again = post(base, key, "alice:alice-secret");
                        assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
                        assertThat(again.body()).isEqualTo("alice run 1");

                        // The same key from another caller is another intent: it runs, and gets its own answer.
                        HttpResponse<String> bob = post(base, key, "bob:bob-secret");
                        assertThat(bob.statusCode()).isEqualTo(201);
                        assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
                        assertThat(bob.body()).isEqualTo("bob run 2");

                        // Spring Security answers first: the filter never sees a request without a caller.
                        assertThat(post(base, key, null).statusCode()).isEqualTo(401);
                        assertThat(context.getBean(App.class).runs).hasValue(2);
                    } finally {
                        server.disposeNow();
                    }
                });
    }

    private HttpResponse<String> post(String base, String key, String credentials) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + "/payments"))
                .timeout(Duration.ofSeconds(30)).header("Idempotency-Key", key)
                .header("Content-Type", "application/json").POST(BodyPublishers.ofString("{}"));
        if (credentials != null) {
            request.header("Authorization", "Basic "
                    + Base64.getEncoder().encodeToString(credentials.getBytes(StandardCharsets.UTF_8)));
        }
        return http.send(request.build(), BodyHandlers.ofString());
    }
}
