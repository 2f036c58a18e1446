package io.retrysafe.spring;

import io.retrysafe.InProgressException;
import io.retrysafe.StoreUnavailableException;
import java.time.Duration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.listener.FailedRecordProcessor;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/**
 * The inbox's "later" for Spring Kafka's error handler: a record whose message id another transaction
 * holds ({@link InProgressException}), or whose database failed ({@link StoreUnavailableException}), is
 * not at fault and must not be given up. Its back-off waits the exception's {@code retryAfter} and never
 * stops, so the handler seeks back and takes the record again for as long as the cause lasts, instead of
 * skipping it or dead-lettering it after the handler's last attempt.
 */
final class KafkaRetryLater {
    /** The wait of an exception that names none; the inbox's always do. */
    private static final Duration UNSPECIFIED_WAIT = Duration.ofSeconds(1);

    private KafkaRetryLater() {
    }

    /** Makes {@code handler} wait out the inbox's "later" without limit; other failures keep its own back-off. */
    static <T extends FailedRecordProcessor> T untilDone(T handler) {
        handler.setBackOffFunction(KafkaRetryLater::backOff);
        return handler;
    }

    /**
     * A back-off without end for a failure whose cause is the inbox's "later", waiting its
     * {@code retryAfter}; null (the handler's own back-off) for any other failure.
     */
    static BackOff backOff(ConsumerRecord<?, ?> record, Exception failure) {
        Duration retryAfter = retryAfter(failure);
        if (retryAfter == null) {
            return null;
        }
        long millis = Math.max(1, retryAfter.toMillis());
        return () -> new BackOffExecution() {
            @Override
            public long nextBackOff() {
                return millis;
            }

            @Override
            public String toString() {
                return "until the message id is free and the database answers, every " + millis + " ms";
            }
        };
    }

    /** The {@code retryAfter} of the inbox's "later" in {@code failure}'s causes (the container wraps it), or null. */
    private static Duration retryAfter(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            Duration retryAfter = t instanceof InProgressException e ? e.retryAfter()
                    : t instanceof StoreUnavailableException e ? e.retryAfter() : null;
            if (t instanceof InProgressException || t instanceof StoreUnavailableException) {
                return retryAfter == null ? UNSPECIFIED_WAIT : retryAfter;
            }
        }
        return null;
    }
}
