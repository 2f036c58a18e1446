package io.retrysafe.spring;

import io.retrysafe.KeyRules;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import javax.sql.DataSource;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.transaction.PlatformTransactionManager;

/** {@link Idempotent} methods on Spring beans, through a plain Spring AOP advisor (no AspectJ needed). */
@AutoConfiguration(after = RetrySafeAutoConfiguration.class,
        afterName = MethodJsonConfiguration.JACKSON_AUTO_CONFIGURATION)
@ConditionalOnClass(name = {"org.springframework.aop.support.DefaultPointcutAdvisor", MethodJsonConfiguration.JACKSON})
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
@Import(MethodJsonConfiguration.class)
public class RetrySafeIdempotentAutoConfiguration {

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean(name = "retrySafeIdempotentAdvisor")
    static DefaultPointcutAdvisor retrySafeIdempotentAdvisor(ObjectProvider<RetrySafe> engine,
            ObjectProvider<TransactionalRetrySafe> transactional, ObjectProvider<PlatformTransactionManager> manager,
            ObjectProvider<DataSource> dataSource, ObjectProvider<KeyRules> keyRules, ObjectProvider<MethodJson> json) {
        // Resolved on first use: an advisor is created before ordinary beans, and must not pull them in early.
        LazyInterceptor interceptor = new LazyInterceptor(() -> {
            TransactionalRetrySafe tx = transactional.getIfAvailable();
            return new IdempotentInterceptor(engine.getObject(), tx, tx == null ? null : manager.getObject(),
                    tx == null ? null : dataSource.getObject(), keyRules.getObject(),
                    json.getObject());
        });
        DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
                new AnnotationMatchingPointcut(null, Idempotent.class, true), interceptor);
        advisor.setOrder(org.springframework.core.Ordered.LOWEST_PRECEDENCE - 10);
        return advisor;
    }
}
