package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.InProgressException;
import io.retrysafe.StoreUnavailableException;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/** The error handler's back-off for the inbox's "later": the exception's wait, without end. */
class KafkaRetryLaterTest {
    private static final ConsumerRecord<String, String> RECORD = new ConsumerRecord<>("orders", 0, 7, "k", "v");

    @Test
    void aDatabaseThatFailsIsWaitedForWithoutEnd() {
        StoreUnavailableException down = new StoreUnavailableException("postgres", Duration.ofMillis(250),
                "no database connection", null);

        assertNeverStops(KafkaRetryLater.backOff(RECORD, new ListenerExecutionFailedException("Listener failed", down)),
                250);
        assertNeverStops(KafkaRetryLater.backOff(RECORD, down), 250);
    }

    @Test
    void aMessageIdHeldElsewhereIsWaitedForWithoutEndAlsoInABatch() {
        InProgressException held = new InProgressException("key held by another transaction", Duration.ofSeconds(2));

        assertNeverStops(KafkaRetryLater.backOff(RECORD, new BatchListenerFailedException("held", held, 3)), 2000);
    }

    @Test
    void anyOtherFailureKeepsTheHandlersOwnBackOff() {
        assertThat(KafkaRetryLater.backOff(RECORD, new ListenerExecutionFailedException("Listener failed",
                new IllegalStateException("the warehouse refuses")))).isNull();
        assertThat(KafkaRetryLater.backOff(RECORD, new IllegalStateException("no cause"))).isNull();
    }

    private static void assertNeverStops(BackOff backOff, long millis) {
        assertThat(backOff).isNotNull();
        BackOffExecution execution = backOff.start();
        for (int i = 0; i < 1000; i++) {
            assertThat(execution.nextBackOff()).as("wait %d", i).isEqualTo(millis);
        }
    }
}
