package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentstesting.HoldingFilter;
import io.retrysafe.spring.RetrySafeWebAutoConfiguration;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;

/** Test only: {@link HoldingFilter} right after the RetrySafe filter, inside the request's transaction. */
@TestConfiguration(proxyBeanMethods = false)
class HoldingFilterConfig {
    @Bean
    FilterRegistrationBean<HoldingFilter> holdingFilter() {
        FilterRegistrationBean<HoldingFilter> registration = new FilterRegistrationBean<>(new HoldingFilter());
        registration.setOrder(RetrySafeWebAutoConfiguration.FILTER_ORDER + 1);
        registration.addUrlPatterns("/payments");
        return registration;
    }
}
