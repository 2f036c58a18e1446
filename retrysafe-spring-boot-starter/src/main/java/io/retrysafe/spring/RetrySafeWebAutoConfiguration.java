package io.retrysafe.spring;

import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.servlet.IdempotentRoute;
import io.retrysafe.servlet.RejectedRequests;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.DispatcherType;
import java.lang.System.Logger.Level;
import java.util.Locale;
import javax.sql.DataSource;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
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
import org.springframework.util.ClassUtils;
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
    private static final System.Logger LOG = System.getLogger(RetrySafeWebAutoConfiguration.class.getName());

    /** After Spring Security's filter chain (order -100) so the principal is known, before the dispatcher. */
    public static final int FILTER_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

    private static final String SPRING_SECURITY = "org.springframework.security.core.context.SecurityContextHolder";

    @Bean
    @ConditionalOnMissingBean
    ScopeResolver retrySafeScopeResolver(RetrySafeProperties properties) {
        RetrySafeProperties.Http http = properties.http();
        String scope = http.scope().toLowerCase(Locale.ROOT);
        return switch (scope) {
            case "principal" -> {
                if (!ClassUtils.isPresent(SPRING_SECURITY, getClass().getClassLoader())) {
                    throw new IllegalStateException("retrysafe.http.scope=principal (the default) scopes keys to the "
                            + "authenticated user, but there is no Spring Security to authenticate one: add it, define "
                            + "a ScopeResolver bean, set retrysafe.http.scope=header with retrysafe.http.scope-header "
                            + "(a tenant header your gateway sets) or retrysafe.http.scope=hashed-header (an API key), "
                            + "or, for a single trusted caller only, retrysafe.http.scope=global "
                            + "(docs/http.md#without-spring-security)");
                }
                yield ScopeResolver.principal();
            }
            case "header" -> {
                String header = requireHeader(http);
                LOG.log(Level.WARNING, () -> "[" + properties.name() + "] retrysafe.http.scope=header: keys are scoped "
                        + "to the value of " + header + " as the request carries it; safe only behind a gateway that "
                        + "sets it and drops the client's own, else a caller can name another's scope and get its "
                        + "answers (hashed-header, or the principal, do not depend on that)");
                yield ScopeResolver.header(header);
            }
            case "hashed-header" -> ScopeResolver.hashedHeader(requireHeader(http));
            case "global" -> {
                LOG.log(Level.WARNING, () -> "[" + properties.name() + "] retrysafe.http.scope=global: every caller "
                        + "shares one key space, so a caller that reuses another's key gets that caller's answer; "
                        + "only for a single trusted caller");
                yield ScopeResolver.global(properties.name());
            }
            default -> throw new IllegalArgumentException("retrysafe.http.scope must be principal, header, hashed-header "
                    + "or global, but was " + http.scope());
        };
    }

    private static String requireHeader(RetrySafeProperties.Http http) {
        if (http.scopeHeader() == null || http.scopeHeader().isBlank()) {
            throw new IllegalArgumentException("retrysafe.http.scope=" + http.scope()
                    + " needs retrysafe.http.scope-header, but it was not set");
        }
        return http.scopeHeader();
    }

    @Bean
    @ConditionalOnMissingBean
    HttpIdempotency retrySafeHttpIdempotency(RetrySafeProperties properties, ScopeResolver scope, KeyRules keyRules,
            RetrySafe retrySafe, StoredResponseProtection protection, Environment environment) {
        RetrySafeProperties.Http http = properties.http();
        HttpIdempotency.Builder b = HttpIdempotency.custom().scope(scope).keyRules(keyRules)
                .maxRequestBytes(http.maxRequestBytes()).maxResponseBytes(http.maxResponseBytes())
                // As Boot's error pages do: a sendError message is shown only with include-message=always
                // (on-param cannot apply: the answer is stored and replayed to requests without the parameter).
                .includeErrorMessages("always".equalsIgnoreCase(
                        environment.getProperty("server.error.include-message", "never")));
        if (http.replayedHeaders() != null) {
            b.replayedHeaders(http.replayedHeaders());
        }
        if (http.routes() != null) {
            for (RetrySafeProperties.Route r : http.routes()) {
                IdempotentRoute.Builder route = IdempotentRoute.of(r.method(), r.pattern()).keyRequired(r.keyRequired());
                if (r.retention() != null || r.atRest() != null) {
                    OperationPolicy.Builder policy = OperationPolicy.from(retrySafe.policy());
                    if (r.retention() != null) {
                        policy.retention(r.retention());
                    }
                    if (r.atRest() != null) {
                        policy.protection(r.atRest() ? protection : StoredResponseProtection.NONE);
                    }
                    route.policy(policy.build());
                }
                if (r.jsonMembers() != null && !r.jsonMembers().isEmpty()) {
                    route.jsonMembers(r.jsonMembers().toArray(String[]::new));
                }
                b.route(route.build());
            }
        }
        return b.build();
    }

    @Bean
    @ConditionalOnMissingBean
    IdempotentExecutor retrySafeExecutor(RetrySafe retrySafe, ObjectProvider<TransactionalRetrySafe> transactional,
            ObjectProvider<PlatformTransactionManager> transactionManager, ObjectProvider<DataSource> dataSource) {
        TransactionalRetrySafe tx = transactional.getIfAvailable();
        if (tx == null) {
            return IdempotentExecutor.standalone(retrySafe);
        }
        PlatformTransactionManager manager = transactionManager.getIfUnique();
        if (manager == null) {
            throw new IllegalStateException("retrysafe.mode=transactional needs one PlatformTransactionManager for the "
                    + "application's DataSource; set retrysafe.mode=standalone to run without one");
        }
        return new SpringTransactionalExecutor(manager, dataSource.getObject(), tx);
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
