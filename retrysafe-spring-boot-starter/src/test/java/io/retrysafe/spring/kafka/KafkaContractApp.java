package io.retrysafe.spring.kafka;

import io.retrysafe.Attempt;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.PayloadBytes;
import io.retrysafe.inbox.tck.ContractHandler;
import io.retrysafe.spring.KafkaInboxAttempt;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * The inbox contract's consumer as a Spring Boot application: one {@code @KafkaListener} record
 * listener on {@code contract.topic} that hands the record's value to the contract's handler, on the
 * connection of the transaction the inbox runs it in and with the inbox's attempt.
 */
@Configuration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class KafkaContractApp {

    /** The spec's handler, payload rule and inbox listener as beans of the application. */
    static ApplicationContextInitializer<ConfigurableApplicationContext> beans(ContractHandler handler,
            PayloadBytes payloadBytes, InboxListener listener) {
        return context -> {
            context.getBeanFactory().registerSingleton("contractHandler", handler);
            context.getBeanFactory().registerSingleton("contractPayloadBytes", payloadBytes);
            context.getBeanFactory().registerSingleton("contractInboxListener", listener);
        };
    }

    @Bean
    ContractListener contractListener(ContractHandler handler, DataSource dataSource) {
        return new ContractListener(handler, dataSource);
    }

    public static final class ContractListener {
        private final ContractHandler handler;
        private final DataSource dataSource;

        ContractListener(ContractHandler handler, DataSource dataSource) {
            this.handler = handler;
            this.dataSource = dataSource;
        }

        @KafkaListener(id = "contract", idIsGroup = false, topics = "${contract.topic}")
        public void consume(ConsumerRecord<String, byte[]> record) throws Exception {
            Attempt attempt = KafkaInboxAttempt.current().orElseThrow(() -> new IllegalStateException(
                    "the listener ran outside the inbox"));
            handler.handle(record.value(), DataSourceUtils.getConnection(dataSource), attempt);
        }
    }
}
