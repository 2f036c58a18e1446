package io.retrysafe.examples.paymentsjpa;

import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.examples.paymentstesting.HoldingFilter;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import io.retrysafe.examples.paymentstesting.PaymentsTarget;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.spring.RetrySafeWebAutoConfiguration;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.servlet.HandlerInterceptor;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * The service on a random port over the test PostgreSQL, seen by a client over real HTTP; one context
 * for every subclass. Test additions: {@link HoldingFilter} inside the request's transaction, a count
 * of the handler runs per key, and the test beans of {@link TestBeans}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@Import({JpaServiceITSupport.Config.class, TestBeans.class})
abstract class JpaServiceITSupport {
    /** Handler runs by Idempotency-Key: a replay answered by the filter adds none. */
    static final Map<String, AtomicInteger> HANDLER_RUNS = new ConcurrentHashMap<>();

    @LocalServerPort
    int port;

    final PaymentsTarget target = new PaymentsTarget(() -> port) {
        /** application.yml leaves retrysafe.http.max-request-bytes at its default. */
        @Override
        public long maxRequestBytes() {
            return HttpIdempotency.DEFAULT_MAX_REQUEST_BYTES;
        }
    };
    final PaymentsClient client = new PaymentsClient(target);

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", PaymentsDatabase::url);
        registry.add("spring.datasource.username", PaymentsDatabase::user);
        registry.add("spring.datasource.password", PaymentsDatabase::password);
        // The server is shared, and its connections are few.
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> 8);
        registry.add("spring.datasource.hikari.minimum-idle", () -> 1);
    }

    static int handlerRuns(String key) {
        AtomicInteger runs = HANDLER_RUNS.get(key);
        return runs == null ? 0 : runs.get();
    }

    @TestConfiguration(proxyBeanMethods = false)
    static class Config implements WebMvcConfigurer {
        @Bean
        FilterRegistrationBean<HoldingFilter> holdingFilter() {
            FilterRegistrationBean<HoldingFilter> registration = new FilterRegistrationBean<>(new HoldingFilter());
            registration.setOrder(RetrySafeWebAutoConfiguration.FILTER_ORDER + 1);
            registration.addUrlPatterns("/payments");
            return registration;
        }

        @Override
        public void addInterceptors(InterceptorRegistry registry) {
            registry.addInterceptor(new HandlerInterceptor() {
                @Override
                public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
                    String key = request.getHeader("Idempotency-Key");
                    if (key != null) {
                        HANDLER_RUNS.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                    }
                    return true;
                }
            }).addPathPatterns("/payments");
        }
    }
}
