package io.retrysafe.r2dbc;

import io.r2dbc.spi.Connection;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.internal.Require;
import java.lang.System.Logger.Level;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

/**
 * Transactional mode over R2DBC: the key, the operation's writes on the same connection, and the
 * stored response commit in one R2DBC transaction, or roll back together. A concurrent duplicate's
 * claim waits in the database (no thread waits) on the key's unique index until the first commits,
 * then replays; past {@link R2dbcIdempotencyStore#lockTimeout()} it is in progress. The outcome
 * completes only after the commit: a caller never sees a success that was rolled back.
 *
 * <pre>{@code
 * TransactionalR2dbcRetrySafe payments = TransactionalR2dbcRetrySafe.of(retrySafe);
 * Mono.usingWhen(connectionFactory.create(),
 *         c -> Mono.fromCompletionStage(payments.execute(c, key, fingerprint, ResponseCodec.utf8(),
 *                 attempt -> insertPayment(c, request).toFuture())),   // same connection: same transaction
 *         Connection::close);
 * }</pre>
 *
 * <p>{@link #join} runs inside a transaction that the caller's transaction manager holds, on its
 * connection (with Spring, the one {@code ConnectionFactoryUtils.getConnection} gives inside a
 * {@code TransactionalOperator} or an {@code R2dbcTransactionManager} transaction), and leaves its
 * commit to it, as {@code TransactionalRetrySafe.join} does for JDBC.
 */
public final class TransactionalR2dbcRetrySafe {
    private static final System.Logger LOG = System.getLogger(TransactionalR2dbcRetrySafe.class.getName());

    private final AsyncRetrySafe engine;
    private final R2dbcIdempotencyStore store;

    private TransactionalR2dbcRetrySafe(AsyncRetrySafe engine, R2dbcIdempotencyStore store) {
        this.engine = engine;
        this.store = store;
    }

    /** Transactional mode for an engine built on an {@link R2dbcIdempotencyStore}, the key written first. */
    public static TransactionalR2dbcRetrySafe of(AsyncRetrySafe engine) {
        Require.notNull(engine, "engine");
        if (!(engine.store() instanceof R2dbcIdempotencyStore store)) {
            throw new IllegalArgumentException("transactional mode needs an engine on an R2dbcIdempotencyStore, but "
                    + "its store was " + engine.store().name());
        }
        if (engine.failOpen()) {
            throw new IllegalArgumentException("transactional mode cannot fail open: the store is the transaction's "
                    + "own database, so there is nothing to run without it");
        }
        return new TransactionalR2dbcRetrySafe(engine, store);
    }

    /** The same mode on the engine with another policy (a route's own retention). */
    public TransactionalR2dbcRetrySafe with(OperationPolicy policy) {
        return new TransactionalR2dbcRetrySafe(engine.with(policy), store);
    }

    public AsyncRetrySafe engine() {
        return engine;
    }

    /**
     * {@link AsyncRetrySafe#oncePerInstance} with this mode's wait, the lock timeout a duplicate would
     * otherwise spend on the key in the database: call it before taking the connection, so that a
     * duplicate of a request in flight on this instance holds none while it waits.
     */
    public <T> CompletionStage<Outcome<T>> oncePerInstance(IdempotencyKey key, Fingerprint fingerprint,
            Supplier<? extends CompletionStage<Outcome<T>>> work) {
        return engine.oncePerInstance(key, fingerprint, store.lockTimeout(), work);
    }

    /**
     * Runs {@code operation} in a transaction on {@code connection} that begins with the claim and
     * commits with the response. The connection must not be inside a transaction: this begins one,
     * and anything but a completion rolls it back. The operation must make the writes that belong to
     * the request on {@code connection}, and its stage must complete only once they are made.
     */
    public <T> CompletionStage<Outcome<T>> execute(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<? extends CompletionStage<T>> operation) {
        Require.notNull(connection, "connection");
        TransactionBoundStore bound = new TransactionBoundStore(store, connection, true);
        CompletableFuture<Outcome<T>> outcome = Mono.from(connection.beginTransaction()).toFuture()
                .handle((begun, failure) -> failure != null
                        ? CompletableFuture.<Outcome<T>>completedFuture(new Outcome.StoreUnavailable<>(
                                store.failure("begin a transaction", failure)
                                        .withRetryAfter(engine.policy().retryAfter())))
                        : engine.withStore(bound).execute(key, fingerprint, codec, operation).toCompletableFuture())
                .thenCompose(Function.identity());
        // Replays, refusals and failures end here: nothing of theirs may be committed.
        return outcome.handle((done, failure) -> bound.ended() ? Mono.<Void>empty()
                        : Mono.from(connection.rollbackTransaction()).onErrorResume(e -> {
                            LOG.log(Level.WARNING, () -> "[" + engine.name() + "] rollback after key " + key.digest()
                                    + " failed: " + e);
                            return Mono.empty();
                        }))
                .thenCompose(Mono::toFuture)
                .thenCompose(rolledBack -> outcome);
    }

    /**
     * Runs {@code operation} inside a transaction the caller manages, on {@code connection}, the
     * transaction's own: the claim and the response are written into it, but nothing is committed or
     * rolled back here. The claim runs behind a savepoint: a claim that does not claim (a replay, a
     * refusal, a lock timeout) is rolled back to it, so the caller's earlier writes stay. The caller
     * must commit only when {@link Joined#commit()} is true, and roll back otherwise; a commit that
     * fails means the outcome must not be reported as a success.
     *
     * <p>Unlike {@code TransactionalRetrySafe.join}, the engine's listener hears the outcome when the
     * engine decides it, before the caller's commit.
     */
    public <T> CompletionStage<Joined<T>> join(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<? extends CompletionStage<T>> operation) {
        Require.notNull(connection, "connection");
        TransactionBoundStore bound = new TransactionBoundStore(store, connection, false);
        return engine.withStore(bound).execute(key, fingerprint, codec, operation)
                .thenApply(outcome -> new Joined<>(outcome, bound.completed()));
    }

    /**
     * What {@link #join} decided, and whether the caller's transaction may commit: true when the
     * response is written into it; false for a replay, a refusal or a released key, whose transaction
     * must be rolled back (the claim was already undone to its savepoint, or must go with it).
     */
    public record Joined<T>(Outcome<T> outcome, boolean commit) {
    }
}
