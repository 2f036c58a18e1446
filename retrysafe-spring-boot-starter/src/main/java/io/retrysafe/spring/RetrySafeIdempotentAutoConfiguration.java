package io.retrysafe.spring;

import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.sql.Connection;
import java.util.List;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.AnnotationTransactionAttributeSource;
import org.springframework.transaction.interceptor.TransactionAttributeSource;
import org.springframework.util.ClassUtils;

/** {@link Idempotent} methods on Spring beans, through a plain Spring AOP advisor (no AspectJ needed). */
@AutoConfiguration(after = RetrySafeAutoConfiguration.class,
        afterName = MethodJsonConfiguration.JACKSON_AUTO_CONFIGURATION)
@ConditionalOnClass(name = {"org.springframework.aop.support.DefaultPointcutAdvisor", MethodJsonConfiguration.JACKSON})
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
@Import(MethodJsonConfiguration.class)
public class RetrySafeIdempotentAutoConfiguration {

    private static final String JPA_TRANSACTION_MANAGER = "org.springframework.orm.jpa.JpaTransactionManager";
    private static final String[] SERVLET_CALLER = {"jakarta.servlet.http.HttpServletRequest",
            "org.springframework.web.context.request.RequestContextHolder"};

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean(name = "retrySafeIdempotentAdvisor")
    static DefaultPointcutAdvisor retrySafeIdempotentAdvisor(ObjectProvider<RetrySafe> engine,
            ObjectProvider<TransactionalRetrySafe> transactional, ObjectProvider<PlatformTransactionManager> manager,
            ObjectProvider<DataSource> dataSource, ObjectProvider<KeyRules> keyRules, ObjectProvider<MethodJson> json,
            ObjectProvider<PhasedRetrySafe<Connection>> phased, ObjectProvider<PhasedMethods> phasedMethods,
            BeanFactory beans) {
        // Resolved on first use: an advisor is created before ordinary beans, and must not pull them in early.
        LazyInterceptor interceptor = new LazyInterceptor(() -> {
            TransactionalRetrySafe tx = transactional.getIfAvailable();
            return new IdempotentInterceptor(engine.getObject(), tx, tx == null ? null : manager.getObject(),
                    tx == null ? null : dataSource.getObject(), keyRules.getObject(),
                    json.getObject(), caller(beans), RetrySafeObservations.of(beans), phased.getIfAvailable(),
                    phasedMethods.getObject());
        });
        DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
                new AnnotationMatchingPointcut(null, Idempotent.class, true), interceptor);
        advisor.setOrder(org.springframework.core.Ordered.LOWEST_PRECEDENCE - 10);
        return advisor;
    }

    /**
     * The caller as the HTTP filter names it (the application's {@code ScopeResolver}, by default the
     * principal's name); with no servlet API there is never one, and principal-scoped calls are refused.
     */
    private static Supplier<String> caller(BeanFactory beans) {
        ClassLoader loader = RetrySafeIdempotentAutoConfiguration.class.getClassLoader();
        for (String type : SERVLET_CALLER) {
            if (!ClassUtils.isPresent(type, loader)) {
                return () -> null;
            }
        }
        return ServletCaller.of(beans);
    }

    /**
     * Checks every {@link Idempotent} method's settings once the beans exist: a mistake fails the start, not a
     * call. The key written last ({@code retrysafe.store.key-order=last}) is refused when there is such a
     * method: it is only for work whose every effect is in a transaction of its own, as a duplicate in flight
     * runs the work too and is rolled back at its insert; a method may call out, and in its caller's
     * transaction that rollback would take the caller's own writes.
     */
    /** The phased {@code @Idempotent} methods, found at start, for the interceptor and the completer. */
    @Bean
    @ConditionalOnMissingBean
    PhasedMethods retrySafePhasedMethods(MethodJson json) {
        return new PhasedMethods(json);
    }

    @Bean
    static SmartInitializingSingleton retrySafeIdempotentMethodsCheck(ListableBeanFactory beans,
            ObjectProvider<RetrySafe> engine, ObjectProvider<TransactionalRetrySafe> transactional,
            ObjectProvider<PlatformTransactionManager> manager, ObjectProvider<PhasedRetrySafe<Connection>> phased,
            ObjectProvider<PhasedMethods> phasedMethods) {
        return () -> {
            RetrySafe e = engine.getIfAvailable();
            TransactionAttributeSource rules = null;
            if (transactional.getIfAvailable() != null && isJpa(manager.getIfUnique())) {
                // The application's own rules (the ones its @Transactional methods run by), or the annotations'.
                rules = beans.getBeanProvider(TransactionAttributeSource.class)
                        .getIfUnique(AnnotationTransactionAttributeSource::new);
            }
            List<IdempotentMethod> methods = IdempotentMethod.checkAll(beans,
                    e == null ? OperationPolicy.ofDefaults() : e.policy(), rules, (bean, method) -> {
                        if (!method.isPhased()) {
                            return;
                        }
                        if (phased.getIfAvailable() == null) {
                            throw new IllegalStateException("@Idempotent on " + method + " takes Phases: phased "
                                    + "operations need the JDBC store (retrysafe.store.type=jdbc), whose steps commit "
                                    + "with their saved values");
                        }
                        phasedMethods.getObject().register(method, bean, beans);
                    });
            TransactionalRetrySafe tx = transactional.getIfAvailable();
            if (tx != null && tx.keyOrder() != KeyOrder.FIRST && !methods.isEmpty()) {
                throw new IllegalStateException("@Idempotent on " + methods.get(0)
                        + (methods.size() > 1 ? " (and " + (methods.size() - 1) + " more methods)" : "")
                        + " cannot run with the key written last (retrysafe.store.key-order="
                        + RetrySafeProperties.spelled(tx.keyOrder()) + "): that order is "
                        + "only for work whose every effect is in a transaction of its own, and a method may call "
                        + "out or join its caller's transaction, which a duplicate in flight would roll back with "
                        + "the caller's own writes; set retrysafe.store.key-order=first");
            }
        };
    }

    /** A JPA transaction manager: a rollback-only mark on its transaction cannot be taken back. */
    private static boolean isJpa(PlatformTransactionManager manager) {
        ClassLoader loader = RetrySafeIdempotentAutoConfiguration.class.getClassLoader();
        return manager != null && ClassUtils.isPresent(JPA_TRANSACTION_MANAGER, loader)
                && ClassUtils.resolveClassName(JPA_TRANSACTION_MANAGER, loader).isInstance(manager);
    }
}
