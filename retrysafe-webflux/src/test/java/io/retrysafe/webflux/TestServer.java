package io.retrysafe.webflux;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.observation.ObservationRegistry;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpClient;
import java.security.Principal;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.springframework.http.server.reactive.HttpHandler;
import org.springframework.security.authentication.AnonymousAuthenticationToken;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/** The filter's tests' server: Reactor Netty on a random port of 127.0.0.1, and the clients that ask it. */
final class TestServer {
    private TestServer() {
    }

    /**
     * Serves {@code routes} behind {@code retrySafe}, which runs after a stand-in for Spring Security:
     * the caller named by the {@code X-User} header is the exchange's principal; without one, a request
     * with {@code X-Anonymous} carries Spring Security's anonymous authentication, as with anonymous access on.
     */
    static DisposableServer start(RouterFunction<ServerResponse> routes, WebFilter retrySafe) {
        return start(routes, retrySafe, ObservationRegistry.NOOP);
    }

    /**
     * As {@link #start(RouterFunction, WebFilter)}, with Spring's observation of each exchange in
     * {@code observations}.
     */
    static DisposableServer start(RouterFunction<ServerResponse> routes, WebFilter retrySafe,
            ObservationRegistry observations) {
        WebFilter authentication = (exchange, chain) -> {
            String user = exchange.getRequest().getHeaders().getFirst("X-User");
            Principal principal = user != null ? () -> user
                    : exchange.getRequest().getHeaders().getFirst("X-Anonymous") != null
                            ? new AnonymousAuthenticationToken("test", "anonymousUser",
                                    AuthorityUtils.createAuthorityList("ROLE_ANONYMOUS"))
                            : null;
            return chain.filter(principal == null ? exchange
                    : exchange.mutate().principal(Mono.just(principal)).build());
        };
        // What RouterFunctions.toHttpHandler builds, with the observations.
        HandlerStrategies strategies = HandlerStrategies.withDefaults();
        HttpHandler handler = WebHttpHandlerBuilder.webHandler(RouterFunctions.toWebHandler(routes, strategies))
                .filter(authentication, retrySafe)
                .exceptionHandlers(handlers -> handlers.addAll(strategies.exceptionHandlers()))
                .localeContextResolver(strategies.localeContextResolver())
                .observationRegistry(observations).build();
        return HttpServer.create().host("127.0.0.1").port(0).handle(new ReactorHttpHandlerAdapter(handler)).bindNow();
    }

    static HttpClient client() {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    /**
     * A client that goes away while its handler runs: alice posts {@code body} to {@code path} under
     * {@code key} on a raw connection, which is closed once {@code started} counts down.
     */
    static void hangUpWhileRunning(DisposableServer server, String path, String testId, String key, String body,
            CountDownLatch started, Duration bound) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", server.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Test: " + testId + "\r\nX-User: alice\r\n"
                    + "Idempotency-Key: " + key + "\r\nContent-Type: application/json\r\nContent-Length: "
                    + body.length() + "\r\n\r\n" + body).getBytes(UTF_8));
            out.flush();
            assertThat(started.await(bound.toSeconds(), SECONDS)).as("the handler started").isTrue();
        }
    }
}
