package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.examples.paymentstesting.TestHold;
import io.retrysafe.spring.RetrySafeReactiveAutoConfiguration;
import java.time.Duration;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.Order;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Test only: holds a request marked with a {@link TestHold} right after the RetrySafe filter, that is
 * inside the request's transaction, after its key was claimed, until the test releases it. A duplicate
 * sent meanwhile meets a request that is provably in flight. The request waits without a thread: its
 * exchange goes on when the hold is released.
 */
final class HoldingWebFilter implements WebFilter {
    /** Longer than any test holds a request; a forgotten hold fails the request instead of hanging it. */
    private static final Duration BOUND = Duration.ofSeconds(60);

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        TestHold hold = TestHold.take(exchange.getRequest().getHeaders().getFirst(TestHold.HEADER));
        if (hold == null) {
            return chain.filter(exchange);
        }
        hold.arrive();
        return Mono.fromFuture(hold.released(), false).timeout(BOUND).then(chain.filter(exchange));
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config {
        @Bean
        @Order(RetrySafeReactiveAutoConfiguration.FILTER_ORDER + 1)
        HoldingWebFilter holdingWebFilter() {
            return new HoldingWebFilter();
        }
    }
}
