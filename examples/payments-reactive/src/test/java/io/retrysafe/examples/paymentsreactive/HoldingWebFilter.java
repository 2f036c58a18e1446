package io.retrysafe.examples.paymentsreactive;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.Order;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Test only: holds a request that carries {@code X-Test-Hold: <name>} right after the RetrySafe filter,
 * that is inside the request's transaction, after its key was claimed, until the test releases it. A
 * duplicate sent meanwhile meets a request that is provably in flight. The request waits without a
 * thread: its exchange resumes when the hold is released.
 */
final class HoldingWebFilter implements WebFilter {
    static final String HEADER = "X-Test-Hold";
    /** Longer than any test holds a request; a forgotten hold fails the request instead of hanging it. */
    private static final Duration BOUND = Duration.ofSeconds(60);
    private static final Map<String, Hold> HOLDS = new ConcurrentHashMap<>();

    static Hold hold(String name) {
        Hold hold = new Hold(name);
        HOLDS.put(name, hold);
        return hold;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        String name = exchange.getRequest().getHeaders().getFirst(HEADER);
        Hold hold = name == null ? null : HOLDS.remove(name);
        if (hold == null) {
            return chain.filter(exchange);
        }
        hold.arrived.complete(null);
        return Mono.fromFuture(hold.released, false).timeout(BOUND).then(chain.filter(exchange));
    }

    static final class Hold implements io.retrysafe.conformance.Hold {
        private final String name;
        private final CompletableFuture<Void> arrived = new CompletableFuture<>();
        private final CompletableFuture<Void> released = new CompletableFuture<>();

        private Hold(String name) {
            this.name = name;
        }

        @Override
        public HttpRequest.Builder mark(HttpRequest.Builder request) {
            return request.header(HEADER, name);
        }

        @Override
        public void awaitArrived() throws Exception {
            arrived.get(30, TimeUnit.SECONDS);
            assertThat(arrived).as("the held request reached the handler").isDone();
        }

        @Override
        public void release() {
            released.complete(null);
        }
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config {
        @Bean
        @Order(RetrySafeWiring.FILTER_ORDER + 1)
        HoldingWebFilter holdingWebFilter() {
            return new HoldingWebFilter();
        }
    }
}
