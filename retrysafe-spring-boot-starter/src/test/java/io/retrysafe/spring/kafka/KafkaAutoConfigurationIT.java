package io.retrysafe.spring.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.spring.BootLine;
import io.retrysafe.spring.RetrySafeAutoConfiguration;
import io.retrysafe.spring.RetrySafeKafkaAutoConfiguration;
import io.retrysafe.spring.RetrySafeMicrometerAutoConfiguration;
import io.retrysafe.spring.RetrySafeProperties;
import io.retrysafe.spring.UnreadablePayloadException;
import io.retrysafe.testservices.TestDatabases;
import java.util.Arrays;
import java.util.List;
import org.aopalliance.aop.Advice;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;

/**
 * What {@code retrysafe.kafka.enabled} does to an application's Kafka set-up, and what it refuses at
 * start-up. The containers are not started ({@code spring.kafka.listener.auto-startup=false}): no
 * broker is needed, PostgreSQL is.
 */
class KafkaAutoConfigurationIT {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.DATA_SOURCE,
                    BootLine.DATA_SOURCE_TRANSACTION_MANAGER, BootLine.KAFKA,
                    RetrySafeMicrometerAutoConfiguration.class, RetrySafeAutoConfiguration.class,
                    RetrySafeKafkaAutoConfiguration.class))
            .withPropertyValues("spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                    "spring.datasource.username=" + TestDatabases.postgresUser(),
                    "spring.datasource.password=" + TestDatabases.postgresPassword(),
                    "spring.kafka.bootstrap-servers=127.0.0.1:9", "spring.kafka.consumer.group-id=g",
                    "spring.kafka.listener.auto-startup=false", "spring.datasource.hikari.maximum-pool-size=2");

    @Test
    void withoutThePropertyTheListenerContainersAreAsBoot() {
        runner.withUserConfiguration(RecordListener.class, ErrorHandler.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(chain(context.getBean(ConcurrentKafkaListenerContainerFactory.class))).isEmpty();
            assertThat(context.getBean(DefaultErrorHandler.class).removeClassification(InvalidKeyException.class))
                    .as("not classified").isNull();
        });
    }

    @Test
    void withThePropertyBootsFactoryGetsTheInboxAdviceAndTheErrorHandlerDoesNotRetryBadIds() {
        runner.withUserConfiguration(RecordListener.class, ErrorHandler.class)
                .withPropertyValues("retrysafe.kafka.enabled=true").run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(chain(context.getBean(ConcurrentKafkaListenerContainerFactory.class)))
                            .singleElement().extracting(a -> a.getClass().getSimpleName())
                            .isEqualTo("KafkaInboxAdvice");
                    DefaultErrorHandler handler = context.getBean(DefaultErrorHandler.class);
                    assertThat(handler.removeClassification(InvalidKeyException.class)).isFalse();
                    assertThat(handler.removeClassification(FingerprintMismatchException.class)).isFalse();
                    assertThat(handler.removeClassification(UnreadablePayloadException.class)).isFalse();
                });
    }

    /** By default the inbox dead-letters; the starter's error handler only waits out its "later", if the application has none. */
    @Test
    void byDefaultTheInboxDeadLettersAndTheStarterGivesAnErrorHandlerOnlyIfTheApplicationHasNone() {
        runner.withUserConfiguration(RecordListener.class).withPropertyValues("retrysafe.kafka.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(CommonErrorHandler.class)
                            .hasBean("retrySafeKafkaInboxErrorHandler");
                    assertThat(context.getBean(RetrySafeProperties.class).kafka().deadLetters())
                            .isEqualTo(RetrySafeProperties.KafkaDeadLetters.INBOX);
                });
        runner.withUserConfiguration(RecordListener.class, ErrorHandler.class)
                .withPropertyValues("retrysafe.kafka.enabled=true")
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(CommonErrorHandler.class)
                        .hasBean("errorHandler"));
    }

    @Test
    void withDeadLettersByTheErrorHandlerTheStarterGivesOneOnlyIfTheApplicationHasNone() {
        runner.withUserConfiguration(RecordListener.class)
                .withPropertyValues("retrysafe.kafka.enabled=true", "retrysafe.kafka.dead-letters=error-handler")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(CommonErrorHandler.class)
                            .hasBean("retrySafeKafkaErrorHandler");
                    DefaultErrorHandler handler = context.getBean(DefaultErrorHandler.class);
                    assertThat(handler.removeClassification(InvalidKeyException.class)).isFalse();
                });
        runner.withUserConfiguration(RecordListener.class, ErrorHandler.class)
                .withPropertyValues("retrysafe.kafka.enabled=true", "retrysafe.kafka.dead-letters=error-handler")
                .run(context -> assertThat(context).hasNotFailed().hasSingleBean(CommonErrorHandler.class)
                        .hasBean("errorHandler"));
    }

    @Test
    void aFactoryLeftOutOfContainerFactoriesHasNoAdvice() {
        runner.withUserConfiguration(RecordListener.class)
                .withPropertyValues("retrysafe.kafka.enabled=true",
                        "retrysafe.kafka.container-factories=someOtherFactory").run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(chain(context.getBean(ConcurrentKafkaListenerContainerFactory.class))).isEmpty();
                });
    }

    @Test
    void aBatchListenerGetsTheInboxAdvice() {
        runner.withUserConfiguration(BatchListener.class).withPropertyValues("retrysafe.kafka.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(chain(context.getBean(ConcurrentKafkaListenerContainerFactory.class)))
                            .singleElement().extracting(a -> a.getClass().getSimpleName())
                            .isEqualTo("KafkaInboxAdvice");
                });
    }

    @Test
    void aBatchListenerWithManualAcknowledgementIsRefusedAtStartUp() {
        runner.withUserConfiguration(BatchListener.class)
                .withPropertyValues("retrysafe.kafka.enabled=true", "spring.kafka.listener.ack-mode=manual")
                .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("retrysafe.kafka.enabled cannot make these listeners exactly once")
                        .hasMessageContaining("batchListener: a batch listener with ack mode MANUAL"));
    }

    @Test
    void manualImmediateAcknowledgementIsRefusedAtStartUp() {
        runner.withUserConfiguration(RecordListener.class)
                .withPropertyValues("retrysafe.kafka.enabled=true", "spring.kafka.listener.ack-mode=manual_immediate")
                .run(context -> assertThat(context).hasFailed().getFailure().rootCause()
                        .hasMessageContaining("recordListener: ack mode MANUAL_IMMEDIATE"));
    }

    @Test
    void withoutTheJdbcStoreInTransactionalModeTheApplicationDoesNotStart() {
        runner.withUserConfiguration(RecordListener.class)
                .withPropertyValues("retrysafe.kafka.enabled=true", "retrysafe.mode=standalone").run(context ->
                        assertThat(context).hasFailed().getFailure().rootCause()
                                .hasMessageContaining("retrysafe.kafka.enabled needs the JDBC store in transactional mode"));
    }

    @Test
    void thePropertyWithoutSpringKafkaOnTheClassPathIsRefusedRatherThanIgnored() {
        new ApplicationContextRunner().withClassLoader(new FilteredClassLoader("org.springframework.kafka"))
                .withConfiguration(AutoConfigurations.of(RetrySafeAutoConfiguration.class,
                        RetrySafeKafkaAutoConfiguration.class))
                .withPropertyValues("retrysafe.kafka.enabled=true").run(context ->
                        assertThat(context).hasFailed().getFailure().rootCause()
                                .hasMessageContaining("retrysafe.kafka.enabled=true needs org.springframework.kafka:"
                                        + "spring-kafka"));
    }

    @Test
    void withoutSpringKafkaAndWithoutThePropertyNothingChanges() {
        new ApplicationContextRunner().withClassLoader(new FilteredClassLoader("org.springframework.kafka"))
                .withConfiguration(AutoConfigurations.of(RetrySafeAutoConfiguration.class,
                        RetrySafeKafkaAutoConfiguration.class))
                .run(context -> assertThat(context).hasNotFailed());
    }

    private static List<Advice> chain(ConcurrentKafkaListenerContainerFactory<?, ?> factory) {
        return Arrays.asList(factory.getContainerProperties().getAdviceChain());
    }

    @Configuration(proxyBeanMethods = false)
    static class RecordListener {
        @KafkaListener(id = "recordListener", topics = "t")
        void listen(ConsumerRecord<String, String> record) {
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class BatchListener {
        @KafkaListener(id = "batchListener", topics = "t", batch = "true")
        void listen(List<ConsumerRecord<String, String>> records) {
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ErrorHandler {
        @Bean
        DefaultErrorHandler errorHandler() {
            return new DefaultErrorHandler();
        }
    }
}
