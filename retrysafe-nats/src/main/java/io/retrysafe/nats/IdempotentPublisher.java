package io.retrysafe.nats;

import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.retrysafe.Backoff;
import io.retrysafe.IdempotencyKeys;
import io.retrysafe.KeyRules;
import io.retrysafe.Sleeper;
import io.retrysafe.internal.Require;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.System.Logger.Level;
import java.time.Duration;

/**
 * Publishes to JetStream with {@code Nats-Msg-Id} set to an idempotency key, and retries a failed
 * publish with the <em>same</em> key, so that the server drops every copy after the first within
 * the stream's duplicate window ({@link PublishAck#isDuplicate()} is true on those).
 *
 * <pre>{@code
 * IdempotentPublisher publisher = IdempotentPublisher.of(nats.jetStream());
 * String key = IdempotencyKeys.uuidV7();                 // once per intent; store it with the intent if
 *                                                       // the retry may come from another process
 * PublishAck ack = publisher.publish("orders.created", key, orderJson);
 * }</pre>
 *
 * <p>The key names the intent ("order 17 was created"), never the moment of sending: a retry made
 * with a new key is a new message. Derive it from the intent with
 * {@link IdempotencyKeys#intent(String, String, byte[])} when the retry cannot remember the key.
 *
 * <p>The server's duplicate window (stream setting {@code duplicate_window}, 2 minutes by default)
 * bounds this protection: a copy published later is stored as a new message. A consumer whose
 * processor reads the id from {@code Nats-Msg-Id} ({@link MessageIds#natsMsgId()}) still processes
 * it once, as long as its inbox record is retained.
 *
 * <p>Immutable and thread-safe.
 */
public final class IdempotentPublisher {
    public static final int DEFAULT_MAX_ATTEMPTS = 3;
    /** 200 ms before each retry, no jitter: the attempts stay well inside the default duplicate window. */
    public static final Backoff DEFAULT_BACKOFF = Backoff.fixed(Duration.ofMillis(200));

    private static final System.Logger LOG = System.getLogger(IdempotentPublisher.class.getName());

    private final JetStream jetStream;
    private final int maxAttempts;
    private final Backoff backoff;
    private final Sleeper pause;
    private final String expectedStream;

    private IdempotentPublisher(Builder b) {
        this.jetStream = b.jetStream;
        this.maxAttempts = b.maxAttempts == null ? DEFAULT_MAX_ATTEMPTS : b.maxAttempts;
        this.backoff = b.backoff == null ? DEFAULT_BACKOFF : b.backoff;
        this.pause = b.pause == null ? Sleeper.THREAD_SLEEP : b.pause;
        this.expectedStream = b.expectedStream;
    }

    /** A publisher with the defaults: {@value #DEFAULT_MAX_ATTEMPTS} attempts, 200 ms apart. */
    public static IdempotentPublisher of(JetStream jetStream) {
        return builder(jetStream).build();
    }

    public static Builder builder(JetStream jetStream) {
        return new Builder(jetStream);
    }

    /** {@link #publish(String, Headers, String, byte[])} without headers of its own. */
    public PublishAck publish(String subject, String key, byte[] payload) throws IOException, JetStreamApiException {
        return publish(subject, null, key, payload);
    }

    /**
     * Publishes {@code payload} with {@code Nats-Msg-Id: key} and waits for the stream's
     * acknowledgement. A failure to get one ({@link IOException}: a time-out, no stream answering, a
     * connection lost) is retried with the same key up to {@code maxAttempts} times in all, after the
     * back-off's delay; an answer of the server ({@link JetStreamApiException}: a wrong expected stream, a full stream) is
     * not retried.
     *
     * @param key a valid key ({@link KeyRules#DEFAULT}: 1 to 255 printable ASCII characters), the same
     *            on every retry of one intent
     * @return the acknowledgement; {@link PublishAck#isDuplicate()} when an earlier copy was stored
     * @throws IOException the last attempt's failure, the earlier ones suppressed in it
     */
    public PublishAck publish(String subject, Headers headers, String key, byte[] payload)
            throws IOException, JetStreamApiException {
        Require.notNull(subject, "subject");
        Require.notNull(payload, "payload");
        KeyRules.DEFAULT.validate(key);
        if (headers != null && headers.containsKeyIgnoreCase(MessageIds.NATS_MSG_ID)) {
            throw new IllegalArgumentException("the headers must not set " + MessageIds.NATS_MSG_ID
                    + ": the key is the message id");
        }
        PublishOptions.Builder options = PublishOptions.builder().messageId(key);
        if (expectedStream != null) {
            options.expectedStream(expectedStream);
        }
        PublishOptions publishOptions = options.build();
        IOException failure = null;
        for (int attempt = 1; attempt <= maxAttempts; attempt++) {
            try {
                PublishAck ack = jetStream.publish(subject, headers, payload, publishOptions);
                if (attempt > 1 || ack.isDuplicate()) {
                    int n = attempt;
                    LOG.log(Level.DEBUG, () -> "publish to " + subject + " acknowledged on attempt " + n
                            + (ack.isDuplicate() ? " as a duplicate (an earlier copy is stored)" : ""));
                }
                return ack;
            } catch (IOException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
                if (attempt < maxAttempts) {
                    int n = attempt;
                    Duration delay = backoff.delay(attempt);
                    LOG.log(Level.WARNING, () -> "publish to " + subject + " failed on attempt " + n + " of "
                            + maxAttempts + "; retrying with the same Nats-Msg-Id in " + delay + ": " + e);
                    pause(delay);
                }
            }
        }
        throw failure;
    }

    private void pause(Duration delay) throws InterruptedIOException {
        try {
            pause.sleep(delay);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted between publish attempts");
        }
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    public Backoff backoff() {
        return backoff;
    }

    @Override
    public String toString() {
        return "IdempotentPublisher[maxAttempts=" + maxAttempts + ", backoff=" + backoff + ", expectedStream="
                + expectedStream + "]";
    }

    /** Builds an {@link IdempotentPublisher}; each value may be set once. */
    public static final class Builder {
        private final JetStream jetStream;
        private Integer maxAttempts;
        private Backoff backoff;
        private Sleeper pause;
        private String expectedStream;

        private Builder(JetStream jetStream) {
            this.jetStream = Require.notNull(jetStream, "jetStream");
        }

        /** Publishes per call, the first included; 1 disables retrying. Default {@value IdempotentPublisher#DEFAULT_MAX_ATTEMPTS}. */
        public Builder maxAttempts(int maxAttempts) {
            Require.unset(this.maxAttempts, "maxAttempts");
            this.maxAttempts = Require.between(maxAttempts, 1, 100, "maxAttempts");
            return this;
        }

        /**
         * The wait before each retry; by default {@link IdempotentPublisher#DEFAULT_BACKOFF} (200 ms).
         * Attempts must all fall inside the stream's duplicate window for the server to drop the copies.
         */
        public Builder backoff(Backoff backoff) {
            Require.unset(this.backoff, "backoff");
            this.backoff = Require.notNull(backoff, "backoff");
            return this;
        }

        /** For tests: how the publisher waits; by default {@link Sleeper#THREAD_SLEEP}. */
        Builder pause(Sleeper pause) {
            Require.unset(this.pause, "pause");
            this.pause = Require.notNull(pause, "pause");
            return this;
        }

        /** Refuses the publish (a {@link JetStreamApiException}) unless this stream stores it. */
        public Builder expectedStream(String expectedStream) {
            Require.unset(this.expectedStream, "expectedStream");
            Require.notNull(expectedStream, "expectedStream");
            if (expectedStream.isBlank()) {
                throw new IllegalArgumentException("expectedStream must not be blank, but was \"" + expectedStream
                        + "\"");
            }
            this.expectedStream = expectedStream;
            return this;
        }

        public IdempotentPublisher build() {
            return new IdempotentPublisher(this);
        }
    }
}
