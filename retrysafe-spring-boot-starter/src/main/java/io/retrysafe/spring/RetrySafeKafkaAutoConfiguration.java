package io.retrysafe.spring;

import io.micrometer.core.instrument.MeterRegistry;
import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.Backoff;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.PayloadBytes;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.kafka.DeadLetterPublisher;
import io.retrysafe.kafka.MessageIds;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.spi.RetrySafeListener;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.aopalliance.aop.Advice;
import org.apache.kafka.common.TopicPartition;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
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
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.BatchMessageListener;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ExceptionClassifier;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.ClassUtils;

/**
 * {@code retrysafe.kafka.enabled=true}: every {@code @KafkaListener} record listener of every
 * listener container factory (Boot's {@code kafkaListenerContainerFactory} and the application's
 * own) takes each message's effect once. The factories get {@link KafkaInboxAdvice} as the last
 * (innermost) element of their containers' advice chain; {@code DefaultErrorHandler} beans (any
 * {@link ExceptionClassifier}) learn that a missing or invalid message id and a reused id are not
 * worth retrying, so their recoverer (a dead-letter topic) gets such records at once. A failing record
 * is dead-lettered by the inbox ({@code dead-letters=inbox}, the default), or by Spring Kafka's error
 * handler ({@code dead-letters=error-handler}): the application's, or else one of the starter's with the
 * inbox's back-off and dead-letter topic; each {@link DeadLetterPublishingRecoverer} adds the inbox's
 * dead-letter headers. Without an error handler of the application's, the starter's never gives up a
 * record for the inbox's "later" (a held message id, a failing database): it waits and takes it again.
 * Before the containers start, the application is refused if the inbox cannot work (no JDBC store in
 * transactional mode, no transaction manager), or if a covered container commits offsets from
 * inside the listener ({@code MANUAL_IMMEDIATE}, or {@code MANUAL} for a batch listener).
 */
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeMicrometerAutoConfiguration.class},
        afterName = {"org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
                "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
                "org.springframework.boot.autoconfigure.kafka.KafkaAutoConfiguration",
                "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
@ConditionalOnProperty(prefix = "retrysafe.kafka", name = "enabled", havingValue = "true")
public class RetrySafeKafkaAutoConfiguration {

    /** The phase of the check: before the listener containers (and their registry) start. */
    static final int CHECK_PHASE = AbstractMessageListenerContainer.DEFAULT_PHASE - 100;
    /** The {@code source} tag of the Kafka inbox's meters. */
    static final String SOURCE = "kafka";
    /** How long the send of a dead letter ({@code dead-letters=inbox}) may take before the record is retried instead. */
    static final long DEAD_LETTER_SEND_TIMEOUT_SECONDS = 30;

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"org.springframework.kafka.config.AbstractKafkaListenerContainerFactory",
            "io.retrysafe.kafka.MessageIds", "io.retrysafe.inbox.Inbox"})
    static class KafkaInboxConfiguration {

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static KafkaInboxAdvice retrySafeKafkaInboxAdvice(RetrySafeProperties properties,
                ObjectProvider<TransactionalRetrySafe> transactional, ObjectProvider<PlatformTransactionManager> managers,
                ObjectProvider<DataSource> dataSources, ObjectProvider<MessageIds> messageIds,
                ObjectProvider<PayloadBytes> payloadBytes, ObjectProvider<InboxListener> inboxListeners,
                ObjectProvider<KafkaOperations<?, ?>> templates, ObjectProvider<RetrySafeListener> listeners,
                ObjectProvider<InboxMeters> metrics, BeanFactory beans) {
            return new KafkaInboxAdvice(() -> inbox(properties, transactional, managers, dataSources, messageIds,
                    payloadBytes, inboxListeners, templates, listeners, metrics, beans));
        }

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static BeanPostProcessor retrySafeKafkaContainerFactoryPostProcessor(ObjectProvider<KafkaInboxAdvice> advice,
                Environment environment) {
            // Read here, not from the properties bean: a post-processor is created before ordinary beans.
            List<String> only = Binder.get(environment).bind("retrysafe.kafka.container-factories",
                    Bindable.listOf(String.class)).orElse(List.of());
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    if (bean instanceof AbstractKafkaListenerContainerFactory<?, ?, ?> factory
                            && (only.isEmpty() || only.contains(beanName))) {
                        ContainerProperties properties = factory.getContainerProperties();
                        List<Advice> chain = new ArrayList<>(Arrays.asList(properties.getAdviceChain()));
                        if (chain.stream().noneMatch(KafkaInboxAdvice.class::isInstance)) {
                            // Last: the innermost advice, right around the listener, inside any retry or tracing advice.
                            chain.add(advice.getObject());
                            properties.setAdviceChain(chain.toArray(new Advice[0]));
                        }
                    } else if (bean instanceof ExceptionClassifier classifier) {
                        // The message is at fault, not the moment: straight to the recoverer.
                        classifier.addNotRetryableExceptions(InvalidKeyException.class,
                                FingerprintMismatchException.class, UnreadablePayloadException.class);
                    }
                    if (bean instanceof DeadLetterPublishingRecoverer recoverer) {
                        // (An ExceptionClassifier too.) The inbox's headers on Spring's dead letters, none
                        // unless dead-letters=error-handler.
                        recoverer.addHeadersFunction(advice.getObject().recovererHeaders()::headers);
                    }
                    return bean;
                }
            };
        }

        /**
         * {@code dead-letters=error-handler} without an error handler of the application's: Spring
         * Kafka's {@code DefaultErrorHandler} retrying with the inbox's back-off and attempts, then
         * publishing to the inbox's dead-letter topic ({@code <topic><dead-letter-suffix>}, the partition
         * the producer's partitioner picks) with the inbox's headers besides Spring's {@code kafka_dlt-*}.
         * Spring Kafka's own default would retry nine times at once and then only log. The inbox's "later"
         * (the message id held elsewhere, the database failing) is no fault of the record: it is taken
         * again for as long as it lasts, never dead-lettered.
         */
        @Bean
        @Conditional(DeadLettersByErrorHandler.class)
        @ConditionalOnMissingBean(CommonErrorHandler.class)
        DefaultErrorHandler retrySafeKafkaErrorHandler(RetrySafeProperties properties,
                ObjectProvider<KafkaOperations<?, ?>> templates, ObjectProvider<KafkaInboxAdvice> advice) {
            KafkaOperations<?, ?> template = templates.getIfUnique();
            if (template == null) {
                throw new IllegalStateException("retrysafe.kafka.dead-letters=error-handler without a CommonErrorHandler "
                        + "bean publishes dead letters through the application's KafkaTemplate, but there was no "
                        + "unique one");
            }
            RetrySafeProperties.Kafka options = properties.kafka();
            String suffix = options.deadLetterSuffix();
            DeadLetterPublishingRecoverer recoverer = new DeadLetterPublishingRecoverer(template,
                    (record, failure) -> new TopicPartition(record.topic() + suffix, -1));
            recoverer.addHeadersFunction(advice.getObject().recovererHeaders()::headers);
            return KafkaRetryLater.untilDone(new DefaultErrorHandler(recoverer,
                    new SpringBackOff(backoff(options), options.maxAttempts())));
        }

        /**
         * {@code dead-letters=inbox} (the default) without an error handler of the application's: the inbox
         * retried and dead-lettered a failing listener itself, so what reaches the container is the inbox's
         * "later" (the message id held by another transaction, the database failing). Spring Kafka's own
         * default would try such a record ten times at once, then log and skip it; this one waits each
         * failure's {@code retryAfter} and takes the record again, seeking back, for as long as the cause
         * lasts. Any other failure keeps Spring Kafka's default back-off.
         */
        @Bean
        @Conditional(DeadLettersByInbox.class)
        @ConditionalOnMissingBean(CommonErrorHandler.class)
        DefaultErrorHandler retrySafeKafkaInboxErrorHandler() {
            return KafkaRetryLater.untilDone(new DefaultErrorHandler());
        }

        @Bean
        static SmartLifecycle retrySafeKafkaStartupCheck(ObjectProvider<KafkaInboxAdvice> advice,
                ObjectProvider<KafkaListenerEndpointRegistry> registry) {
            return new KafkaStartupCheck(advice, registry);
        }

        private static KafkaInboxAdvice.Inboxes inbox(RetrySafeProperties properties,
                ObjectProvider<TransactionalRetrySafe> transactional, ObjectProvider<PlatformTransactionManager> managers,
                ObjectProvider<DataSource> dataSources, ObjectProvider<MessageIds> messageIds,
                ObjectProvider<PayloadBytes> payloadBytes, ObjectProvider<InboxListener> inboxListeners,
                ObjectProvider<KafkaOperations<?, ?>> templates, ObjectProvider<RetrySafeListener> listeners,
                ObjectProvider<InboxMeters> metrics, BeanFactory beans) {
            InboxPrerequisites needs = InboxPrerequisites.of("retrysafe.kafka.enabled", transactional, managers,
                    dataSources);
            TransactionalRetrySafe tx = needs.transactional();
            PlatformTransactionManager manager = needs.manager();
            DataSource dataSource = needs.dataSource();
            TransactionalRetrySafe kafka = InboxMeters.engine(tx, SOURCE, metrics, listeners);
            PayloadBytes payloads = payloadBytes.getIfAvailable(() -> PayloadBytes.STANDARD);
            RetrySafeProperties.Kafka options = properties.kafka();
            boolean byInbox = options.deadLetters() == RetrySafeProperties.KafkaDeadLetters.INBOX;
            Inbox.Builder record = Inbox.builder(kafka)
                    .transactions(SpringInboxTransactions.ownTransaction(manager, dataSource))
                    .payloadBytes(payloads)
                    // By the error handler: one attempt per call, it retries.
                    .maxAttempts(byInbox ? options.maxAttempts() : 1)
                    .backoff(backoff(options));
            // A batch's run: one attempt, for a failure rolls the whole run back and it is taken again record by record.
            Inbox.Builder joined = Inbox.builder(kafka)
                    .transactions(SpringInboxTransactions.joinTransaction(manager, dataSource))
                    .payloadBytes(payloads).maxAttempts(1);
            InboxListener listener = inboxListeners.getIfAvailable();
            if (listener != null) {
                record.listener(listener);
                joined.listener(listener);
            }
            DeadLetterPublisher<Object, Object> deadLetters = null;
            if (byInbox) {
                @SuppressWarnings("unchecked")
                KafkaOperations<Object, Object> template = (KafkaOperations<Object, Object>) templates.getIfUnique();
                if (template == null) {
                    throw new IllegalStateException("retrysafe.kafka.dead-letters=inbox (the default) publishes dead "
                            + "letters through the application's KafkaTemplate, but there was no unique one");
                }
                // Acknowledged, or the record is retried instead.
                deadLetters = deadLetter -> template.send(deadLetter).get(DEAD_LETTER_SEND_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
            return new KafkaInboxAdvice.Inboxes(record.build(), joined.build(), manager,
                    messageIds.getIfAvailable(() -> messageIds(options)), RetrySafeObservations.of(beans), deadLetters,
                    options.deadLetterSuffix());
        }

        /** The one back-off of both modes: the inbox's, and the starter's error handler's. */
        private static Backoff backoff(RetrySafeProperties.Kafka kafka) {
            return Backoff.exponential(kafka.backoff(), kafka.maxBackoff());
        }

        private static MessageIds messageIds(RetrySafeProperties.Kafka kafka) {
            return switch (kafka.messageId()) {
                case HEADER -> MessageIds.header(kafka.header());
                case CLOUDEVENTS -> MessageIds.cloudEventsId();
                case TOPIC_PARTITION_OFFSET -> MessageIds.topicPartitionOffset();
            };
        }
    }

    /** Meters of the Kafka inbox: the engine's meters with {@code source=kafka}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = {"io.micrometer.core.instrument.MeterRegistry",
            "io.retrysafe.micrometer.MicrometerRetrySafeListener",
            "org.springframework.kafka.config.AbstractKafkaListenerContainerFactory"})
    @ConditionalOnBean(MeterRegistry.class)
    static class KafkaInboxMetricsConfiguration {

        @Bean
        InboxMeters retrySafeKafkaMetrics(MeterRegistry registry, RetrySafeProperties properties) {
            return new InboxMeters(SOURCE, MicrometerRetrySafeListener.builder(registry, properties.name())
                    .source(SOURCE).build());
        }
    }

    /** The property is set, but what it needs is not on the class path: say so rather than do nothing. */
    @Configuration(proxyBeanMethods = false)
    @Conditional(KafkaClassesMissing.class)
    static class MissingKafkaConfiguration {

        @Bean
        Object retrySafeKafkaMissing() {
            throw new IllegalStateException("retrysafe.kafka.enabled=true needs org.springframework.kafka:spring-kafka "
                    + "(spring-boot-starter-kafka), io.retrysafe:retrysafe-kafka and io.retrysafe:retrysafe-inbox on the class path");
        }
    }

    /** {@code retrysafe.kafka.dead-letters=error-handler}, in any spelling the binder takes; not set is {@code inbox}. */
    static final class DeadLettersByErrorHandler implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return Binder.get(context.getEnvironment()).bind("retrysafe.kafka.dead-letters",
                    RetrySafeProperties.KafkaDeadLetters.class)
                    .map(mode -> mode == RetrySafeProperties.KafkaDeadLetters.ERROR_HANDLER).orElse(false);
        }
    }

    /** {@code retrysafe.kafka.dead-letters=inbox}, or not set. */
    static final class DeadLettersByInbox implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !new DeadLettersByErrorHandler().matches(context, metadata);
        }
    }

    /** One of the three is missing ({@code @ConditionalOnMissingClass} would need both missing). */
    static final class KafkaClassesMissing implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            ClassLoader loader = context.getClassLoader();
            return !ClassUtils.isPresent("org.springframework.kafka.config.AbstractKafkaListenerContainerFactory", loader)
                    || !ClassUtils.isPresent("io.retrysafe.kafka.MessageIds", loader)
                    || !ClassUtils.isPresent("io.retrysafe.inbox.Inbox", loader);
        }
    }

    /**
     * Runs before the containers start: resolves the inbox (a misconfiguration stops the start-up
     * rather than the first record), and refuses covered containers it cannot make exactly once.
     */
    static final class KafkaStartupCheck implements SmartLifecycle {
        private final ObjectProvider<KafkaInboxAdvice> advice;
        private final ObjectProvider<KafkaListenerEndpointRegistry> registry;
        private volatile boolean running;

        KafkaStartupCheck(ObjectProvider<KafkaInboxAdvice> advice,
                ObjectProvider<KafkaListenerEndpointRegistry> registry) {
            this.advice = advice;
            this.registry = registry;
        }

        @Override
        public void start() {
            advice.getObject().resolve();
            KafkaListenerEndpointRegistry containers = registry.getIfAvailable();
            if (containers != null) {
                List<String> refused = new ArrayList<>();
                for (MessageListenerContainer container : containers.getAllListenerContainers()) {
                    String problem = problem(container);
                    if (problem != null) {
                        refused.add(container.getListenerId() + ": " + problem);
                    }
                }
                if (!refused.isEmpty()) {
                    throw new IllegalStateException("retrysafe.kafka.enabled cannot make these listeners exactly once: "
                            + String.join("; ", refused) + " (see docs/messaging.md, Spring Kafka)");
                }
            }
            running = true;
        }

        private static String problem(MessageListenerContainer container) {
            ContainerProperties properties = container.getContainerProperties();
            if (Arrays.stream(properties.getAdviceChain()).noneMatch(KafkaInboxAdvice.class::isInstance)) {
                return null;
            }
            if (properties.getAckMode() == ContainerProperties.AckMode.MANUAL_IMMEDIATE) {
                return "ack mode MANUAL_IMMEDIATE (the offset would commit inside the listener, before the database "
                        + "transaction; use MANUAL, RECORD or BATCH)";
            }
            if (properties.getMessageListener() instanceof BatchMessageListener<?, ?>
                    && properties.getAckMode() == ContainerProperties.AckMode.MANUAL) {
                return "a batch listener with ack mode MANUAL (a batch may reach the listener in several calls, and "
                        + "acknowledge() in the first would cover the records of the others; use BATCH)";
            }
            return null;
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
