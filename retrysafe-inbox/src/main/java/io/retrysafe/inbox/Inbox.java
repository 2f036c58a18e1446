package io.retrysafe.inbox;

import io.retrysafe.Attempt;
import io.retrysafe.Backoff;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomePolicy;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.lang.System.Logger.Level;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.function.Predicate;
import javax.sql.DataSource;

/**
 * The message inbox every broker adapter runs: processes one delivery of one message at most once
 * per scope, in the database. The message id is marked processed in the same transaction as the
 * handler's writes (the inbox is RetrySafe's records table), so a redelivery, or a producer's
 * duplicate, finds it there and is skipped.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
 * Inbox inbox = Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(store).name("orders").build()))
 *         .maxAttempts(5)
 *         .backoff(Backoff.exponential(Duration.ofMillis(200), Duration.ofSeconds(5)))
 *         .build();
 * Delivery delivery = Delivery.of(Inbox.scope("kafka", group, topic), messageId, value, "orders-3@1042");
 * InboxResult result = inbox.process(delivery, (connection, attempt) -> ship(connection, value),
 *         deadLetter -> publishToDeadLetterTopic(record, deadLetter.headers()));
 * if (result.isDone()) { acknowledge(); } else { redeliverAfter(((InboxResult.RetryLater) result).delay()); }
 * }</pre>
 *
 * <p>For each delivery: the id, checked against the key rules, is the key within the delivery's
 * scope; the SHA-256 of the payload's bytes ({@link PayloadBytes}) its fingerprint. Then one
 * transaction on a pooled connection: claim the key, run the handler on the same connection, store
 * the delivery's position as the outcome, commit ({@link TransactionalRetrySafe#execute}).
 *
 * <table class="striped">
 * <caption>Results</caption>
 * <thead><tr><th scope="col">what happened</th><th scope="col">result</th></tr></thead>
 * <tbody>
 * <tr><td>the handler ran and committed</td><td>{@link InboxResult.Processed}</td></tr>
 * <tr><td>the id was processed before, same payload</td><td>{@link InboxResult.Replayed}: not run</td></tr>
 * <tr><td>no id; an invalid id; a payload that cannot be had as bytes</td>
 *     <td>{@link InboxResult.DeadLetter} at once, not run, nothing stored</td></tr>
 * <tr><td>the id was processed before with another payload</td><td>{@link InboxResult.DeadLetter}, not run</td></tr>
 * <tr><td>the handler threw, attempts left</td><td>{@link RetryStyle#IN_PROCESS}: back off and run again;
 *     {@link RetryStyle#BROKER_REDELIVERY}: {@link InboxResult.RetryLater} with the back-off's delay</td></tr>
 * <tr><td>the handler threw on attempt {@code maxAttempts}, or a permanent failure</td>
 *     <td>{@link InboxResult.DeadLetter}</td></tr>
 * <tr><td>another transaction holds the id past the store's lock timeout; the database failed;
 *     the dead letter was not acknowledged</td><td>{@link InboxResult.RetryLater}</td></tr>
 * </tbody>
 * </table>
 *
 * <p>Immutable and thread-safe; the handler may be called from several threads at once.
 */
public final class Inbox {
    public static final int DEFAULT_MAX_ATTEMPTS = 3;
    /** 200 ms before the second attempt, doubling up to 5 s, no jitter. */
    public static final Backoff DEFAULT_BACKOFF = Backoff.exponential(Duration.ofMillis(200), Duration.ofSeconds(5));
    public static final RetryStyle DEFAULT_RETRY_STYLE = RetryStyle.IN_PROCESS;

    private static final System.Logger LOG = System.getLogger(Inbox.class.getName());
    private static final ResponseCodec<String> POSITION = ResponseCodec.utf8();

    private final RetrySafe engine;
    private final TransactionalRetrySafe transactional;
    private final InboxTransactions transactions;
    private final KeyRules keyRules;
    private final RetryStyle retryStyle;
    private final int maxAttempts;
    private final Backoff backoff;
    private final PayloadBytes payloadBytes;
    private final Predicate<? super Exception> permanentFailure;
    private final InboxListener listener;

    private Inbox(Builder b) {
        RetrySafe given = b.transactional.engine();
        // Every outcome of a handler that returned is kept: there is no status to judge it by.
        this.transactional = b.transactional.with(
                OperationPolicy.from(given.policy()).outcomePolicy(OutcomePolicy.STORE_ALL).build());
        this.engine = transactional.engine();
        this.transactions = b.transactions != null ? b.transactions : InboxTransactions.pooled(
                b.dataSource != null ? b.dataSource : b.transactional.dataSource());
        this.keyRules = b.keyRules != null ? b.keyRules : KeyRules.DEFAULT;
        this.retryStyle = b.retryStyle != null ? b.retryStyle : DEFAULT_RETRY_STYLE;
        this.maxAttempts = b.maxAttempts != null ? b.maxAttempts : DEFAULT_MAX_ATTEMPTS;
        this.backoff = b.backoff != null ? b.backoff : DEFAULT_BACKOFF;
        this.payloadBytes = b.payloadBytes != null ? b.payloadBytes : PayloadBytes.STANDARD;
        this.permanentFailure = b.permanentFailure != null ? b.permanentFailure : e -> false;
        this.listener = b.listener != null ? b.listener : InboxListener.NONE;
    }

    /**
     * @param transactional the engine in transactional mode on the database the handler writes to; its
     *     policy's retention is how long a message id is remembered, and must outlast every redelivery
     *     and producer retry (the default 24 h)
     */
    public static Builder builder(TransactionalRetrySafe transactional) {
        return new Builder(transactional);
    }

    /**
     * A scope as adapters build it, {@code <broker>:<first>:<second>}: {@code kafka:<consumer group>:<topic>},
     * {@code nats:<stream>:<consumer>}.
     *
     * @throws IllegalArgumentException if it is longer than {@value IdempotencyKey#MAX_SCOPE_LENGTH} characters
     */
    public static String scope(String broker, String first, String second) {
        String scope = Require.notBlank(broker, "broker") + ":" + Require.notBlank(first, "first") + ":"
                + Require.notBlank(second, "second");
        if (scope.length() > IdempotencyKey.MAX_SCOPE_LENGTH) {
            throw new IllegalArgumentException("the scope " + broker + ":…:… must have at most "
                    + IdempotencyKey.MAX_SCOPE_LENGTH + " characters, but had " + scope.length() + " for " + first
                    + " and " + second + "; use shorter names");
        }
        return scope;
    }

    /**
     * Processes one delivery: see the class comment. With {@link RetryStyle#IN_PROCESS} it blocks
     * through the handler's retries; it blocks through the dead-letter publish. Returns a result
     * {@linkplain InboxResult#isDone() done} or {@link InboxResult.RetryLater}; an {@link Error}
     * the handler throws propagates.
     *
     * @param deadLetters publishes this delivery's dead letter, if it must be dead-lettered
     * @throws IllegalArgumentException with {@link RetryStyle#BROKER_REDELIVERY}, if the delivery count is unknown
     */
    public InboxResult process(Delivery delivery, InboxHandler handler, DeadLetterSink deadLetters) {
        Require.notNull(delivery, "delivery");
        Require.notNull(handler, "handler");
        Require.notNull(deadLetters, "deadLetters");
        if (retryStyle == RetryStyle.BROKER_REDELIVERY && !delivery.isDeliveryCountKnown()) {
            throw new IllegalArgumentException("retries by broker redelivery count attempts by the delivery count, "
                    + "but " + delivery + " has none");
        }
        InboxResult result = decide(delivery, handler, deadLetters);
        guard("onResult", () -> listener.onResult(delivery, result));
        return result;
    }

    /**
     * Dead-letters a delivery whose id the adapter could not read at all (an id header twice, not
     * UTF-8), exactly as {@link #process} does an id that breaks the key rules:
     * {@link DeadLetterReason#MISSING_MESSAGE_ID} for {@link InvalidKeyException.Rule#MISSING},
     * {@link DeadLetterReason#INVALID_MESSAGE_ID} otherwise. The handler does not run.
     */
    public InboxResult refuse(Delivery delivery, InvalidKeyException failure, DeadLetterSink deadLetters) {
        Require.notNull(delivery, "delivery");
        Require.notNull(failure, "failure");
        Require.notNull(deadLetters, "deadLetters");
        InboxResult result = invalidId(delivery, failure, deadLetters);
        guard("onResult", () -> listener.onResult(delivery, result));
        return result;
    }

    private InboxResult invalidId(Delivery delivery, InvalidKeyException failure, DeadLetterSink deadLetters) {
        engine.listener().onInvalidKey(failure);
        return deadLetter(delivery, failure.rule() == InvalidKeyException.Rule.MISSING
                ? DeadLetterReason.MISSING_MESSAGE_ID : DeadLetterReason.INVALID_MESSAGE_ID, 0, failure, deadLetters);
    }

    private InboxResult decide(Delivery delivery, InboxHandler handler, DeadLetterSink deadLetters) {
        IdempotencyKey key;
        try {
            key = keyRules.key(delivery.scope(), delivery.messageId());
        } catch (InvalidKeyException e) {
            return invalidId(delivery, e, deadLetters);
        }
        Fingerprint fingerprint;
        try {
            byte[] bytes = payloadBytes.bytes(delivery.payload());
            if (bytes == null) {
                throw new IllegalStateException("the payload-bytes function returned null");
            }
            fingerprint = Fingerprint.sha256(bytes);
        } catch (Exception e) {
            return deadLetter(delivery, DeadLetterReason.UNREADABLE_PAYLOAD, 0, e, deadLetters);
        }
        int attempt = retryStyle == RetryStyle.BROKER_REDELIVERY ? delivery.deliveryCount() : 1;
        while (true) {
            Outcome<String> outcome;
            try {
                outcome = runOnce(delivery, handler, key, fingerprint, attempt);
            } catch (HandlerFailed failed) {
                int n = attempt;
                guard("onHandlerFailure", () -> listener.onHandlerFailure(delivery, n, failed.error));
                if (permanentFailure.test(failed.error)) {
                    return deadLetter(delivery, DeadLetterReason.PERMANENT_FAILURE, attempt, failed.error, deadLetters);
                }
                if (attempt >= maxAttempts) {
                    return deadLetter(delivery, DeadLetterReason.HANDLER_FAILED, attempt, failed.error, deadLetters);
                }
                LOG.log(Level.INFO, () -> prefix() + "handler failed on " + delivery.position() + " (key " + key.digest()
                        + "), attempt " + n + " of " + maxAttempts + ": " + failed.error);
                if (retryStyle == RetryStyle.BROKER_REDELIVERY) {
                    return retryLater(delivery, backoff.delay(attempt), RetryReason.HANDLER_FAILED,
                            "attempt " + attempt + " of " + maxAttempts + " failed: "
                                    + DeadLetterHeaders.describe(failed.error));
                }
                if (!backoff.sleep(attempt)) {
                    return retryLater(delivery, engine.policy().retryAfter(), RetryReason.INTERRUPTED,
                            "interrupted while backing off before attempt " + (attempt + 1));
                }
                attempt++;
                continue;
            } catch (StoreUnavailableException e) {
                // The handler ran but the commit failed: nothing of it was kept. Not the message's fault.
                return retryLater(delivery, e.retryAfter(), RetryReason.STORE_UNAVAILABLE,
                        "the database failed: " + e.getMessage());
            } catch (SQLException e) {
                return retryLater(delivery, engine.policy().retryAfter(), RetryReason.STORE_UNAVAILABLE,
                        "no database connection: " + e.getMessage());
            }
            if (outcome instanceof Outcome.Executed<String> || outcome instanceof Outcome.Unprotected<String>) {
                return new InboxResult.Processed(attempt);
            } else if (outcome instanceof Outcome.Replayed<String> replayed) {
                LOG.log(Level.DEBUG, () -> prefix() + "skipped " + delivery.position() + " (key " + key.digest()
                        + "): processed before at " + replayed.value());
                return new InboxResult.Replayed(replayed.value());
            } else if (outcome instanceof Outcome.InProgress<String> inProgress) {
                return retryLater(delivery, inProgress.retryAfter(), RetryReason.IN_PROGRESS,
                        "key " + key.digest() + " is held by another transaction (another consumer?)");
            } else if (outcome instanceof Outcome.FingerprintMismatch<String>) {
                return deadLetter(delivery, DeadLetterReason.FINGERPRINT_MISMATCH, 0,
                        "message id was processed before with a different payload", deadLetters);
            } else if (outcome instanceof Outcome.StoreUnavailable<String> unavailable) {
                return retryLater(delivery, unavailable.retryAfter(), RetryReason.STORE_UNAVAILABLE,
                        "the database failed: " + unavailable.failure().getMessage());
            }
            throw new IllegalStateException("unknown outcome " + outcome);
        }
    }

    private Outcome<String> runOnce(Delivery delivery, InboxHandler handler, IdempotencyKey key,
            Fingerprint fingerprint, int attempt) throws SQLException {
        // A redelivery of a message in flight on this instance waits here, holding no connection, for it to end.
        try {
            return transactional.oncePerInstance(key, fingerprint, () -> {
                try {
                    return transactions.execute(transactional, key, fingerprint, POSITION, connection -> {
                        try {
                            // The engine's own count restarts at 1 in transactional mode (a failed attempt
                            // leaves no record); the handler is told the inbox's count.
                            handler.handle(connection, new Attempt(key, attempt));
                        } catch (Exception e) {
                            throw new HandlerFailed(e);
                        }
                        return delivery.position();
                    });
                } catch (SQLException e) {
                    throw new NoConnection(e);
                }
            });
        } catch (NoConnection e) {
            throw e.getCause();
        }
    }

    /** No connection could be had for an attempt: carried out of {@link TransactionalRetrySafe#oncePerInstance}. */
    private static final class NoConnection extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NoConnection(SQLException cause) {
            super(cause);
        }

        @Override
        public synchronized SQLException getCause() {
            return (SQLException) super.getCause();
        }
    }

    private InboxResult retryLater(Delivery delivery, Duration delay, RetryReason reason, String detail) {
        LOG.log(Level.INFO, () -> prefix() + delivery.position() + " is retried in " + delay + " ("
                + reason.tagValue() + "): " + detail);
        return new InboxResult.RetryLater(delay, reason, detail);
    }

    private InboxResult deadLetter(Delivery delivery, DeadLetterReason reason, int attempts, Exception cause,
            DeadLetterSink deadLetters) {
        return deadLetter(delivery, reason, attempts, DeadLetterHeaders.describe(cause), deadLetters);
    }

    private InboxResult deadLetter(Delivery delivery, DeadLetterReason reason, int attempts, String error,
            DeadLetterSink deadLetters) {
        Map<String, String> headers = DeadLetterHeaders.of(delivery, reason, attempts, error);
        InboxResult.DeadLetter deadLetter = new InboxResult.DeadLetter(reason, attempts,
                headers.get(DeadLetterHeaders.ERROR), headers);
        try {
            deadLetters.publish(deadLetter);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return retryLater(delivery, engine.policy().retryAfter(), RetryReason.DEAD_LETTER_FAILED,
                    "interrupted while publishing the dead letter");
        } catch (Exception e) {
            return retryLater(delivery, engine.policy().retryAfter(), RetryReason.DEAD_LETTER_FAILED,
                    "the dead letter was not acknowledged: " + DeadLetterHeaders.describe(e));
        }
        LOG.log(Level.WARNING, () -> prefix() + delivery.position() + " dead-lettered: " + reason.headerValue()
                + (attempts > 0 ? " after " + attempts + " attempts" : "") + (error.isEmpty() ? "" : ": " + deadLetter.error()));
        return deadLetter;
    }

    /** The engine the inbox runs, with {@link OutcomePolicy#STORE_ALL}; its listener hears every message. */
    public RetrySafe engine() {
        return engine;
    }

    public RetryStyle retryStyle() {
        return retryStyle;
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    public Backoff backoff() {
        return backoff;
    }

    public KeyRules keyRules() {
        return keyRules;
    }

    private String prefix() {
        return "[" + engine.name() + "] ";
    }

    private void guard(String method, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> prefix() + "listener " + listener.getClass().getName() + "." + method
                    + " threw; ignored", e);
        }
    }

    @Override
    public String toString() {
        return "Inbox[engine=" + engine.name() + ", retryStyle=" + retryStyle + ", maxAttempts=" + maxAttempts
                + ", backoff=" + backoff + "]";
    }

    /** A handler's exception, carried through the engine (which rolls back) to the retry loop. */
    private static final class HandlerFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        private final transient Exception error;

        HandlerFailed(Exception error) {
            super(error);
            this.error = error;
        }
    }

    /** Builds an {@link Inbox}; each value may be set once. */
    public static final class Builder {
        private final TransactionalRetrySafe transactional;
        private DataSource dataSource;
        private InboxTransactions transactions;
        private KeyRules keyRules;
        private RetryStyle retryStyle;
        private Integer maxAttempts;
        private Backoff backoff;
        private PayloadBytes payloadBytes;
        private Predicate<? super Exception> permanentFailure;
        private InboxListener listener;

        private Builder(TransactionalRetrySafe transactional) {
            this.transactional = Require.notNull(transactional, "transactional");
        }

        /** Where connections come from; by default the store's data source. It must be the store's database. */
        public Builder dataSource(DataSource dataSource) {
            Require.unset(this.dataSource, "dataSource");
            this.dataSource = Require.notNull(dataSource, "dataSource");
            return this;
        }

        /**
         * How each attempt's transaction is run; by default {@link InboxTransactions#pooled} on the
         * {@link #dataSource}. Not together with {@link #dataSource}.
         */
        public Builder transactions(InboxTransactions transactions) {
            Require.unset(this.transactions, "transactions");
            this.transactions = Require.notNull(transactions, "transactions");
            return this;
        }

        /** What a message id must look like; by default {@link KeyRules#DEFAULT}. */
        public Builder keyRules(KeyRules keyRules) {
            Require.unset(this.keyRules, "keyRules");
            this.keyRules = Require.notNull(keyRules, "keyRules");
            return this;
        }

        /** Where a failed handler is tried again; by default {@link RetryStyle#IN_PROCESS}. */
        public Builder retryStyle(RetryStyle retryStyle) {
            Require.unset(this.retryStyle, "retryStyle");
            this.retryStyle = Require.notNull(retryStyle, "retryStyle");
            return this;
        }

        /** How many times the handler runs for one message before it is dead-lettered; at least 1, by default {@value Inbox#DEFAULT_MAX_ATTEMPTS}. */
        public Builder maxAttempts(int maxAttempts) {
            Require.unset(this.maxAttempts, "maxAttempts");
            this.maxAttempts = Require.between(maxAttempts, 1, Integer.MAX_VALUE, "maxAttempts");
            return this;
        }

        /** The wait before each retry of a failed handler; by default {@link #DEFAULT_BACKOFF}. */
        public Builder backoff(Backoff backoff) {
            Require.unset(this.backoff, "backoff");
            this.backoff = Require.notNull(backoff, "backoff");
            return this;
        }

        /** The payload's bytes for the fingerprint; by default {@link PayloadBytes#STANDARD}. */
        public Builder payloadBytes(PayloadBytes payloadBytes) {
            Require.unset(this.payloadBytes, "payloadBytes");
            this.payloadBytes = Require.notNull(payloadBytes, "payloadBytes");
            return this;
        }

        /**
         * Which handler exceptions are not worth another attempt (a validation error, say): the
         * message is dead-lettered at once as {@link DeadLetterReason#PERMANENT_FAILURE}. By default none.
         */
        public Builder permanentFailure(Predicate<? super Exception> permanentFailure) {
            Require.unset(this.permanentFailure, "permanentFailure");
            this.permanentFailure = Require.notNull(permanentFailure, "permanentFailure");
            return this;
        }

        public Builder listener(InboxListener listener) {
            Require.unset(this.listener, "listener");
            this.listener = Require.notNull(listener, "listener");
            return this;
        }

        /**
         * Without a data source or transactions, the inbox takes its connections from the transactional mode's store.
         *
         * @throws IllegalStateException if both a data source and transactions are set
         */
        public Inbox build() {
            if (dataSource != null && transactions != null) {
                throw new IllegalStateException("dataSource and transactions exclude each other: the transactions "
                        + "decide where connections come from, but both were set");
            }
            return new Inbox(this);
        }
    }
}
