package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentstesting.TestHold;
import io.retrysafe.spring.RetrySafeWebAutoConfiguration;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;

/**
 * Test only: holds a request marked with a {@link TestHold} right after the RetrySafe filter, that is
 * inside the request's transaction, after its key was claimed, until the test releases it. A duplicate
 * sent meanwhile meets a request that is provably in flight.
 */
final class HoldingFilter implements Filter {

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        TestHold hold = TestHold.take(((HttpServletRequest) request).getHeader(TestHold.HEADER));
        if (hold != null) {
            hold.arrive();
            try {
                hold.released().get(60, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new ServletException("test hold was not released within 60 s", e);
            } catch (ExecutionException e) {
                throw new ServletException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ServletException(e);
            }
        }
        chain.doFilter(request, response);
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
