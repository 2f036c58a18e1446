package io.retrysafe.spring;

import io.retrysafe.Attempt;
import java.util.Optional;

/**
 * The inbox's attempt a record listener runs in, for a listener that wants its number (with
 * {@code retrysafe.kafka.dead-letters=inbox}, the default, attempt 2 is the first retry within the
 * call; with {@code dead-letters=error-handler} the error handler retries and every call is attempt 1):
 * {@code KafkaInboxAttempt.current().map(Attempt::number)}. Empty outside a listener call the inbox
 * runs, and in a batch listener, whose call covers several records.
 */
public final class KafkaInboxAttempt {
    private static final ThreadLocal<Attempt> CURRENT = new ThreadLocal<>();

    private KafkaInboxAttempt() {
    }

    public static Optional<Attempt> current() {
        return Optional.ofNullable(CURRENT.get());
    }

    static void set(Attempt attempt) {
        if (attempt == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(attempt);
        }
    }
}
