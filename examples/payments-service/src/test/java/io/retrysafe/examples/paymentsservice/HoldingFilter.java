package io.retrysafe.examples.paymentsservice;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.spring.RetrySafeWebAutoConfiguration;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;

/**
 * Test only: holds a request that carries {@code X-Test-Hold: <name>} right after the RetrySafe
 * filter, that is inside the request's transaction, after its key was claimed, until the test
 * releases it. A duplicate sent meanwhile meets a request that is provably in flight.
 */
final class HoldingFilter implements Filter {
    static final String HEADER = "X-Test-Hold";
    private static final Map<String, Hold> HOLDS = new ConcurrentHashMap<>();

    static Hold hold(String name) {
        Hold hold = new Hold(name);
        HOLDS.put(name, hold);
        return hold;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        String name = ((HttpServletRequest) request).getHeader(HEADER);
        Hold hold = name == null ? null : HOLDS.remove(name);
        if (hold != null) {
            hold.arrived.countDown();
            try {
                if (!hold.released.await(60, TimeUnit.SECONDS)) {
                    throw new ServletException("test hold " + name + " was not released within 60 s");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ServletException(e);
            }
        }
        chain.doFilter(request, response);
    }

    static final class Hold implements io.retrysafe.conformance.Hold {
        private final String name;
        private final CountDownLatch arrived = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);

        private Hold(String name) {
            this.name = name;
        }

        @Override
        public HttpRequest.Builder mark(HttpRequest.Builder request) {
            return request.header(HEADER, name);
        }

        @Override
        public void awaitArrived() throws InterruptedException {
            assertThat(arrived.await(30, TimeUnit.SECONDS)).as("the held request reached the handler").isTrue();
        }

        @Override
        public void release() {
            released.countDown();
        }

        @Override
        public void close() {
            release();
        }
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config {
        @Bean
        FilterRegistrationBean<HoldingFilter> holdingFilter() {
            FilterRegistrationBean<HoldingFilter> registration = new FilterRegistrationBean<>(new HoldingFilter());
            registration.setOrder(RetrySafeWebAutoConfiguration.FILTER_ORDER + 1);
            registration.addUrlPatterns("/payments");
            return registration;
        }
    }
}
