package io.retrysafe.webflux;


import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.testservices.ChildJvm;
import io.retrysafe.testservices.LargeResponses;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.HttpStatus;
import org.springframework.web.reactive.function.BodyInserters;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.netty.DisposableServer;

/**
 * A response far larger than the bound held for replay, served by the WebFlux filter in a JVM whose heap is
 * smaller than the response ({@code -Xmx256m}, {@link ChildJvm}): the client gets every byte, the server
 * survives, and a retry does not run the handler again, as with the servlet filter.
 */
class LargeResponseIT {
    private static final long BODY_BYTES = 200L * 1024 * 1024;
    private static final int CHUNK = 64 * 1024;

    private final HttpClient http = TestServer.client();

    /** The server: the filter on the in-memory store, in front of a handler that writes {@code args[0]} bytes. */
    public static final class App {
        public static void main(String[] args) throws Exception {
            ChildJvm.haltWhenParentDies();
            long bytes = Long.parseLong(args[0]);
            AtomicInteger runs = new AtomicInteger();
            AsyncRetrySafe engine = AsyncRetrySafe.builder(new InMemoryIdempotencyStore().async())
                    .name("webflux-large-response").build();
            WebFluxIdempotency config = WebFluxIdempotency.custom().route(HttpRoute.of("POST", "/large").build())
                    .scope(ReactiveScopeResolver.header("X-User")).build();
            DisposableServer server = TestServer.start(RouterFunctions.route()
                    .POST("/large", request -> {
                        runs.incrementAndGet();
                        // Written lazily, one buffer as the client takes the one before: never the whole body.
                        return ServerResponse.ok().header("Content-Type", "application/octet-stream")
                                .body(BodyInserters.fromDataBuffers(Flux.range(0, (int) ((bytes + CHUNK - 1) / CHUNK))
                                        .map(i -> DefaultDataBufferFactory.sharedInstance.wrap(
                                                new byte[(int) Math.min(CHUNK, bytes - (long) i * CHUNK)]))));
                    })
                    .GET("/large", request -> ServerResponse.status(HttpStatus.OK).bodyValue(runs.toString()))
                    .build(), new RetrySafeWebFilter(config, engine));
            System.out.println("READY http://127.0.0.1:" + server.port() + "/large");
            Thread.currentThread().join();
        }
    }

    @Test
    void aResponseLargerThanTheHeapIsServedWholeAndItsRetryDoesNotRunTheHandlerAgain() throws Exception {
        try (ChildJvm server = ChildJvm.start(App.class, "READY", Long.toString(BODY_BYTES))) {
            LargeResponses.assertServedWholeOnceThenReplayedWithoutBody(http,
                    URI.create(server.awaitLine(Duration.ofSeconds(60))), BODY_BYTES);
        }
    }
}
