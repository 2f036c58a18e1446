package io.retrysafe.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrysafe.Backoff;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.rabbitmq.ConfirmedPublisher;
import io.retrysafe.rabbitmq.MessageIds;
import io.retrysafe.rabbitmq.RabbitInbox;
import io.retrysafe.spi.RetrySafeListener;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import javax.sql.DataSource;
import org.aopalliance.aop.Advice;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.MessageListenerContainer;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.DirectFieldAccessor;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.ClassUtils;

/**
 * {@code retrysafe.rabbit.enabled=true}: every {@code @RabbitListener} of every listener container
 * factory (Boot's {@code rabbitListenerContainerFactory} and the application's own, or those named in
 * {@code retrysafe.rabbit.container-factories}) takes each message's effect once. The factories get
 * {@link RabbitInboxAdvice} as the last (innermost) element of their containers' advice chain. Before
 * the containers start, the application is refused if the inbox cannot work (no JDBC store in
 * transactional mode, no transaction manager, no consumer name), or if a covered container does not
 * acknowledge after the listener returns (acknowledge mode {@code MANUAL} or {@code NONE}).
 */
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeMicrometerAutoConfiguration.class},
        afterName = {"org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
                "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
                "org.springframework.boot.autoconfigure.amqp.RabbitAutoConfiguration",
                "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
@ConditionalOnProperty(prefix = "retrysafe.rabbit", name = "enabled", havingValue = "true")
public class RetrySafeRabbitAutoConfiguration {

    /** The phase of the check: before the listener containers (and their registry) start. */
    static final int CHECK_PHASE = Integer.MAX_VALUE - 1000 - 100;
    /** The {@code source} tag of the RabbitMQ inbox's meters. */
    static final String SOURCE = "rabbitmq";

    @Configuration(proxyBeanMethods = false)
    @Conditional(RabbitClassesPresent.class)
    static class RabbitInboxConfiguration {

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static RabbitInboxAdvice retrySafeRabbitInboxAdvice(RetrySafeProperties properties,
                ObjectProvider<TransactionalRetrySafe> transactional, ObjectProvider<PlatformTransactionManager> managers,
                ObjectProvider<DataSource> dataSources, ObjectProvider<ConnectionFactory> connectionFactories,
                ObjectProvider<RetrySafeListener> listeners, ObjectProvider<InboxMeters> metrics,
                Environment environment) {
            return new RabbitInboxAdvice(() -> inbox(properties.rabbit(), transactional, managers, dataSources,
                    connectionFactories, listeners, metrics, environment));
        }

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static BeanPostProcessor retrySafeRabbitContainerFactoryPostProcessor(ObjectProvider<RabbitInboxAdvice> advice,
                Environment environment) {
            // Read here, not from the properties bean: a post-processor is created before ordinary beans.
            List<String> only = Binder.get(environment).bind("retrysafe.rabbit.container-factories",
                    Bindable.listOf(String.class)).orElse(List.of());
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    if (bean instanceof AbstractRabbitListenerContainerFactory<?> factory
                            && (only.isEmpty() || only.contains(beanName))) {
                        Advice[] current = factory.getAdviceChain();
                        List<Advice> chain = new ArrayList<>(current == null ? List.of() : Arrays.asList(current));
                        if (chain.stream().noneMatch(RabbitInboxAdvice.class::isInstance)) {
                            // Last: the innermost advice, right around the listener, inside any retry or tracing advice.
                            chain.add(advice.getObject());
                            factory.setAdviceChain(chain.toArray(new Advice[0]));
                        }
                    }
                    return bean;
                }
            };
        }

        @Bean
        static SmartLifecycle retrySafeRabbitStartupCheck(ObjectProvider<RabbitInboxAdvice> advice,
                ObjectProvider<RabbitListenerEndpointRegistry> registry) {
            return new RabbitStartupCheck(advice, registry);
        }

        private static RabbitInbox inbox(RetrySafeProperties.Rabbit rabbit,
                ObjectProvider<TransactionalRetrySafe> transactional, ObjectProvider<PlatformTransactionManager> managers,
                ObjectProvider<DataSource> dataSources, ObjectProvider<ConnectionFactory> connectionFactories,
                ObjectProvider<RetrySafeListener> listeners, ObjectProvider<InboxMeters> metrics,
                Environment environment) {
            InboxPrerequisites needs = InboxPrerequisites.of("retrysafe.rabbit.enabled", transactional, managers,
                    dataSources);
            TransactionalRetrySafe tx = needs.transactional();
            PlatformTransactionManager manager = needs.manager();
            DataSource dataSource = needs.dataSource();
            ConnectionFactory connections = connectionFactories.getIfUnique();
            if (connections == null) {
                throw new IllegalStateException("retrysafe.rabbit.enabled needs one Spring AMQP ConnectionFactory for "
                        + "its dead letters, but had none or several");
            }
            String consumerName = rabbit.consumerName() != null && !rabbit.consumerName().isBlank()
                    ? rabbit.consumerName() : environment.getProperty("spring.application.name");
            if (consumerName == null || consumerName.isBlank()) {
                throw new IllegalStateException("retrysafe.rabbit.enabled needs a consumer name for the scope "
                        + "rabbitmq:<consumer name>:<queue>: set retrysafe.rabbit.consumer-name or spring.application.name");
            }
            if (rabbit.backoff().compareTo(rabbit.maxBackoff()) > 0) {
                throw new IllegalStateException("retrysafe.rabbit.backoff must not exceed retrysafe.rabbit.max-backoff, "
                        + "but was " + rabbit.backoff() + " and " + rabbit.maxBackoff());
            }
            Inbox inbox = Inbox.builder(InboxMeters.engine(tx, SOURCE, metrics, listeners))
                    .transactions(SpringInboxTransactions.ownTransaction(manager, dataSource))
                    .maxAttempts(rabbit.maxAttempts())
                    .backoff(Backoff.exponential(rabbit.backoff(), rabbit.maxBackoff()))
                    .build();
            String suffix = rabbit.deadLetterSuffix();
            // The connection the factory has now: after a failure it opens another, and the publisher asks again.
            ConfirmedPublisher deadLetters = ConfirmedPublisher.of(() -> connections.createConnection().getDelegate(),
                    ConfirmedPublisher.DEFAULT_CONFIRM_TIMEOUT);
            return RabbitInbox.builder(inbox).consumerName(consumerName)
                    .messageIds(rabbit.messageIdHeader() == null || rabbit.messageIdHeader().isBlank()
                            ? MessageIds.messageIdProperty() : MessageIds.header(rabbit.messageIdHeader()))
                    .deadLetters(deadLetters, rabbit.deadLetterExchange() == null ? "" : rabbit.deadLetterExchange(),
                            queue -> queue + suffix)
                    .build();
        }
    }

    /** Meters of the RabbitMQ inbox: the engine's meters with {@code source=rabbitmq}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.micrometer.core.instrument.MeterRegistry",
            "io.retrysafe.micrometer.MicrometerRetrySafeListener",
            "org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory"})
    @ConditionalOnBean(MeterRegistry.class)
    static class RabbitInboxMetricsConfiguration {

        @Bean
        InboxMeters retrySafeRabbitMetrics(MeterRegistry registry, RetrySafeProperties properties) {
            return new InboxMeters(SOURCE, MicrometerRetrySafeListener.builder(registry, properties.name())
                    .source(SOURCE).build());
        }
    }

    /** The property is set, but what it needs is not on the class path: say so rather than do nothing. */
    @Configuration(proxyBeanMethods = false)
    @Conditional(RabbitClassesMissing.class)
    static class MissingRabbitConfiguration {

        @Bean
        Object retrySafeRabbitMissing() {
            throw new IllegalStateException("retrysafe.rabbit.enabled=true needs org.springframework.amqp:spring-rabbit "
                    + "(spring-boot-starter-amqp) and io.retrysafe:retrysafe-rabbitmq on the class path");
        }
    }

    static final class RabbitClassesPresent implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            ClassLoader loader = context.getClassLoader();
            return ClassUtils.isPresent("org.springframework.amqp.rabbit.config.AbstractRabbitListenerContainerFactory",
                    loader) && ClassUtils.isPresent("io.retrysafe.rabbitmq.RabbitInbox", loader);
        }
    }

    /** Either of the two is missing ({@code @ConditionalOnMissingClass} would need both missing). */
    static final class RabbitClassesMissing implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !new RabbitClassesPresent().matches(context, metadata);
        }
    }

    /**
     * Runs before the containers start: resolves the inbox (a misconfiguration stops the start-up
     * rather than the first message), and refuses covered containers it cannot make exactly once.
     */
    static final class RabbitStartupCheck implements SmartLifecycle {
        private final ObjectProvider<RabbitInboxAdvice> advice;
        private final ObjectProvider<RabbitListenerEndpointRegistry> registry;
        private volatile boolean running;

        RabbitStartupCheck(ObjectProvider<RabbitInboxAdvice> advice,
                ObjectProvider<RabbitListenerEndpointRegistry> registry) {
            this.advice = advice;
            this.registry = registry;
        }

        @Override
        public void start() {
            advice.getObject().resolve();
            RabbitListenerEndpointRegistry containers = registry.getIfAvailable();
            if (containers != null) {
                List<String> refused = new ArrayList<>();
                for (MessageListenerContainer container : containers.getListenerContainers()) {
                    if (container instanceof AbstractMessageListenerContainer c && covered(c)
                            && c.getAcknowledgeMode() != AcknowledgeMode.AUTO) {
                        refused.add(c.getListenerId() + ": acknowledge mode " + c.getAcknowledgeMode()
                                + " (the message must be acknowledged by the container after the listener returned, "
                                + "after the commit: use AUTO)");
                    }
                }
                if (!refused.isEmpty()) {
                    throw new IllegalStateException("retrysafe.rabbit.enabled cannot make these listeners exactly once: "
                            + String.join("; ", refused) + " (see docs/messaging.md, Spring AMQP)");
                }
            }
            running = true;
        }

        private static boolean covered(AbstractMessageListenerContainer container) {
            // The container's getter is protected; the field is what the factory set.
            Advice[] chain = (Advice[]) new DirectFieldAccessor(container).getPropertyValue("adviceChain");
            return chain != null && Arrays.stream(chain).anyMatch(RabbitInboxAdvice.class::isInstance);
        }

        @Override
        public void stop() {
            running = false;
        }

        @Override
        public boolean isRunning() {
            return running;
        }

        @Override
        public int getPhase() {
            return CHECK_PHASE;
        }
    }
}
