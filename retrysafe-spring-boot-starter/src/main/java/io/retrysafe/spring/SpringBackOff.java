package io.retrysafe.spring;

import io.retrysafe.Backoff;
import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.BackOffExecution;

/**
 * Core's {@link Backoff} as Spring's {@link BackOff}, so that a Spring retry (Spring Kafka's
 * {@code DefaultErrorHandler}) waits as the inbox does: before retry {@code n} it waits
 * {@link Backoff#delay delay(n)}, and after {@code maxAttempts} runs in all it stops.
 *
 * @param backoff     the waits
 * @param maxAttempts runs in all, the first included; at least 1 (1: no retry)
 */
record SpringBackOff(Backoff backoff, int maxAttempts) implements BackOff {

    SpringBackOff {
        if (backoff == null) {
            throw new IllegalArgumentException("backoff must not be null");
        }
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, but was " + maxAttempts);
        }
    }

    @Override
    public BackOffExecution start() {
        return new BackOffExecution() {
            /** The retry the next wait is for: 1 after the first failed run. */
            private int retry;

            @Override
            public long nextBackOff() {
                retry++;
                return retry < maxAttempts ? backoff.delay(retry).toMillis() : STOP;
            }

            @Override
            public String toString() {
                return "SpringBackOff[" + backoff + ", maxAttempts=" + maxAttempts + ", retry=" + retry + "]";
            }
        };
    }
}
