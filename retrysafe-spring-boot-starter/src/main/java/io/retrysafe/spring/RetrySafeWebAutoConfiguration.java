package io.retrysafe.spring;

import io.retrysafe.KeyRules;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.servlet.RejectedRequests;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.DispatcherType;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.security.web.firewall.RequestRejectedHandler;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * The servlet filter with the Idempotency-Key semantics, registered after Spring Security's
 * filters (so the principal is known) for the configured routes.
 */
@AutoConfiguration(after = RetrySafeAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(RetrySafeFilter.class)
@ConditionalOnProperty(prefix = "retrysafe", name = {"enabled", "http.enabled"}, havingValue = "true",
        matchIfMissing = true)
@Import(TomcatRejectionsConfiguration.class)
public class RetrySafeWebAutoConfiguration {
    /** After Spring Security's filter chain (order -100) so the principal is known, before the dispatcher. */
    public static final int FILTER_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

    private static final String SPRING_SECURITY = "org.springframework.security.core.context.SecurityContextHolder";

    @Bean
    @ConditionalOnMissingBean
    ScopeResolver retrySafeScopeResolver(RetrySafeProperties properties) {
        return HttpConfigurer.scope(properties, new HttpConfigurer.Scopes<>(ScopeResolver::principal, ScopeResolver::header,
                ScopeResolver::hashedHeader, ScopeResolver::global), ScopeResolver.class, SPRING_SECURITY,
                "docs/http.md#without-spring-security");
    }

    @Bean
    @ConditionalOnMissingBean
    HttpIdempotency retrySafeHttpIdempotency(RetrySafeProperties properties, ScopeResolver scope, KeyRules keyRules,
            RetrySafe retrySafe, StoredResponseProtection protection, Environment environment) {
        return HttpConfigurer.configure(HttpIdempotency.custom(), properties, scope, keyRules, retrySafe.policy(),
                        protection)
                // As Boot's error pages do: a sendError message is shown only with include-message=always
                // (on-param cannot apply: the answer is stored and replayed to requests without the parameter).
                .includeErrorMessages("always".equalsIgnoreCase(
                        environment.getProperty("server.error.include-message", "never")))
                .build();
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotentExecutor retrySafeExecutor(RetrySafe retrySafe, ObjectProvider<TransactionalRetrySafe> transactional,
            ObjectProvider<PlatformTransactionManager> transactionManager, ObjectProvider<DataSource> dataSource,
            ObjectProvider<StandaloneRoutes> standaloneRoutes) {
        TransactionalRetrySafe tx = transactional.getIfAvailable();
        if (tx == null) {
            return IdempotentExecutor.standalone(retrySafe);
        }
        PlatformTransactionManager manager = transactionManager.getIfUnique();
        if (manager == null) {
            throw new IllegalStateException("retrysafe.mode=transactional needs one PlatformTransactionManager for the "
                    + "application's DataSource; set retrysafe.mode=standalone to run without one");
        }
        IdempotentExecutor executor = new SpringTransactionalExecutor(manager, dataSource.getObject(), tx);
        StandaloneRoutes routes = standaloneRoutes.getIfAvailable();
        return routes == null ? executor
                : new RouteModeExecutor(executor, IdempotentExecutor.standalone(retrySafe), routes);
    }

    /** Transactional mode with Spring MVC: routes served by asynchronous handlers, found once the handlers are known. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.web.servlet.mvc.method.RequestMappingInfoHandlerMapping")
    @ConditionalOnBean(TransactionalRetrySafe.class)
    static class AsyncHandlerRoutesConfiguration {
        @Bean
        @ConditionalOnMissingBean(IdempotentExecutor.class)
        AsyncHandlerRoutes retrySafeAsyncHandlerRoutes(ListableBeanFactory beans, HttpIdempotency config,
                RetrySafeProperties properties) {
            return new AsyncHandlerRoutes(beans, config, properties);
        }
    }

    /** Problem documents for refusals thrown by {@link Idempotent} controller or service methods. */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnClass(name = "org.springframework.web.bind.annotation.RestControllerAdvice")
    RetrySafeExceptionHandler retrySafeExceptionHandler() {
        return new RetrySafeExceptionHandler();
    }

    @Bean
    @ConditionalOnMissingBean
    RejectedRequests retrySafeRejectedRequests(HttpIdempotency config, RetrySafe retrySafe) {
        return new RejectedRequests(config, retrySafe.listener());
    }

    /** Spring Security's firewall: its refusals on protected routes are the filter's problems. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.security.web.firewall.RequestRejectedHandler")
    static class FirewallRejections {
        @Bean
        @ConditionalOnMissingBean(RequestRejectedHandler.class)
        RequestRejectedHandler retrySafeRequestRejectedHandler(RejectedRequests rejected) {
            return new FirewallRejectionHandler(rejected);
        }
    }

    @Bean
    @ConditionalOnMissingBean(name = "retrySafeFilterRegistration")
    FilterRegistrationBean<RetrySafeFilter> retrySafeFilterRegistration(HttpIdempotency config,
            IdempotentExecutor executor, RetrySafe retrySafe, BeanFactory beans) {
        // Observed outermost: a replay from the fast filter counts as one too.
        FilterRegistrationBean<RetrySafeFilter> registration = new FilterRegistrationBean<>(new RetrySafeFilter(config,
                new ObservedExecutor(executor, RetrySafeObservations.of(beans)), retrySafe.listener()));
        registration.setName("retrySafeFilter");
        registration.setOrder(FILTER_ORDER);
        // ASYNC too: an asynchronous handler's answer is recorded when its cycle's last dispatch ends.
        registration.setDispatcherTypes(DispatcherType.REQUEST, DispatcherType.ASYNC);
        return registration;
    }

    /**
     * Just outside the filter: its own answers (a replay, a refusal) tagged with their route in Spring's
     * {@code http.server.requests}, not {@code uri="UNKNOWN"}.
     */
    @Bean
    @ConditionalOnMissingBean(name = "retrySafeRouteObservationRegistration")
    FilterRegistrationBean<RouteObservationFilter> retrySafeRouteObservationRegistration() {
        FilterRegistrationBean<RouteObservationFilter> registration =
                new FilterRegistrationBean<>(new RouteObservationFilter());
        registration.setName("retrySafeRouteObservation");
        registration.setOrder(FILTER_ORDER - 1);
        return registration;
    }

    /** Refuses, before they run, handlers on protected requests whose answer cannot be recorded. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.web.servlet.config.annotation.WebMvcConfigurer")
    static class HandlerGuardConfiguration implements WebMvcConfigurer {
        @Override
        public void addInterceptors(InterceptorRegistry registry) {
            registry.addInterceptor(new RetrySafeHandlerGuard());
        }
    }
}
