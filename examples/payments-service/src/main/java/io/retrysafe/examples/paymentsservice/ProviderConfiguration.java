package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentsservice.provider.PaymentProvider;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.StringUtils;

/**
 * The payment provider the checkout calls: the one at {@code payments.provider.url} (env
 * {@code PAYMENTS_PROVIDER_URL}), or, when that is not set, one started in this process on a free loopback
 * port, so that the service runs with nothing else started. Its charges live as long as the process.
 */
@Configuration(proxyBeanMethods = false)
class ProviderConfiguration {
    private static final System.Logger LOG = System.getLogger(ProviderConfiguration.class.getName());

    @Bean(destroyMethod = "close")
    @Conditional(NoProviderUrl.class)
    PaymentProvider inProcessPaymentProvider() throws IOException {
        PaymentProvider provider = PaymentProvider.start(0);
        LOG.log(Level.INFO, "payment provider started in this process at {0} (payments.provider.url is not set)",
                provider.url());
        return provider;
    }

    /**
     * @param timeout how long a call may go unanswered; then its outcome is unknown (the provider may have acted)
     */
    @Bean
    ProviderClient providerClient(@Value("${payments.provider.url:}") String url,
            @Value("${payments.provider.timeout:10s}") Duration timeout, ObjectProvider<PaymentProvider> inProcess) {
        return new ProviderClient(StringUtils.hasText(url) ? url : inProcess.getObject().url(), timeout);
    }

    /** Matches when no {@code payments.provider.url} is configured (absent or blank). */
    static final class NoProviderUrl implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !StringUtils.hasText(context.getEnvironment().getProperty("payments.provider.url"));
        }
    }
}
