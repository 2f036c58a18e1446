package io.retrysafe.jdbc;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;

/**
 * Transactional mode: the key, the operation's writes on the same connection, and the stored
 * response commit in one database transaction. A crash anywhere rolls all of it back, so nothing is
 * half done; a concurrent duplicate waits on the key's unique index until the first commits, then
 * replays (past {@link JdbcIdempotencyStore#lockTimeout()}: in progress). The outcome is returned
 * only after the commit succeeded: a caller never sees a success that was rolled back.
 *
 * <pre>{@code
 * TransactionalRetrySafe payments = TransactionalRetrySafe.of(retrySafe);
 * try (Connection c = dataSource.getConnection()) {
 *     Outcome<String> outcome = payments.execute(c, key, fingerprint, ResponseCodec.utf8(),
 *             attempt -> insertPayment(c, request));   // same connection: same transaction
 * }
 * }</pre>
 *
 * <p>Round trips over the bare transaction: one, the claim (it carries the lock bound with it). The
 * response is written in the round trip that commits.
 */
public final class TransactionalRetrySafe {
    private static final System.Logger LOG = System.getLogger(TransactionalRetrySafe.class.getName());

    private final RetrySafe engine;
    private final JdbcIdempotencyStore store;
    private final KeyOrder keyOrder;

    private TransactionalRetrySafe(RetrySafe engine, JdbcIdempotencyStore store, KeyOrder keyOrder) {
        this.engine = engine;
        this.store = store;
        this.keyOrder = keyOrder;
    }

    /** Transactional mode for an engine built on a {@link JdbcIdempotencyStore}, the key written first. */
    public static TransactionalRetrySafe of(RetrySafe engine) {
        return of(engine, KeyOrder.FIRST);
    }

    /**
     * Transactional mode for an engine built on a {@link JdbcIdempotencyStore}, the key written as
     * {@code keyOrder} says.
     *
     * @throws IllegalArgumentException with {@link KeyOrder#LAST} or {@link KeyOrder#LAST_NO_LOOKUP}, if the store
     *     is not PostgreSQL's standard layout
     */
    public static TransactionalRetrySafe of(RetrySafe engine, KeyOrder keyOrder) {
        Require.notNull(engine, "engine");
        Require.notNull(keyOrder, "keyOrder");
        if (!(engine.store() instanceof JdbcIdempotencyStore store)) {
            throw new IllegalArgumentException("transactional mode needs an engine on a JdbcIdempotencyStore, but its "
                    + "store was " + engine.store().name());
        }
        if (engine.failOpen()) {
            throw new IllegalArgumentException("transactional mode cannot fail open: the store is the transaction's "
                    + "own database, so there is nothing to run without it");
        }
        if (keyOrder.writesLast() && !store.sql().requests().supportsKeyLast()) {
            throw new IllegalArgumentException("the key can be written last only on PostgreSQL's standard layout, where"
                    + " a unique index makes a second insert of a key fail; store " + store.name() + " is "
                    + store.dialect() + " with layout " + store.layout());
        }
        return new TransactionalRetrySafe(engine, store, keyOrder);
    }

    public KeyOrder keyOrder() {
        return keyOrder;
    }

    /** The same mode, key order included, on the engine with another policy (a route's own retention). */
    public TransactionalRetrySafe with(OperationPolicy policy) {
        return new TransactionalRetrySafe(engine.with(policy), store, keyOrder);
    }

    /**
     * {@link RetrySafe#oncePerInstance} with this mode's wait, the lock timeout a duplicate would
     * otherwise spend on the key in the database: call it before taking the connection, so that a
     * duplicate of a request in flight on this instance holds none while it waits.
     */
    public <T> Outcome<T> oncePerInstance(IdempotencyKey key, Fingerprint fingerprint, Supplier<Outcome<T>> work) {
        return engine.oncePerInstance(key, fingerprint, store.lockTimeout(), work);
    }

    /**
     * {@link #oncePerInstance(IdempotencyKey, Fingerprint, Supplier)} for {@code work} that runs {@link #execute}
     * with {@code codec}: a duplicate of a request whose answer is stored (committed) is given it from memory,
     * without a connection ({@link RetrySafe#oncePerInstance(IdempotencyKey, Fingerprint, Duration,
     * ResponseCodec, Supplier)}).
     */
    public <T> Outcome<T> oncePerInstance(IdempotencyKey key, Fingerprint fingerprint, ResponseCodec<T> codec,
            Supplier<Outcome<T>> work) {
        return engine.oncePerInstance(key, fingerprint, store.lockTimeout(), codec, work);
    }

    /**
     * Runs {@code operation} in a transaction on {@code connection} that begins with the claim and
     * commits with the response. The connection must not be inside a transaction with earlier
     * writes: anything but a completion rolls the transaction back. Its auto-commit setting is
     * restored afterwards. The operation must use {@code connection} for the writes that belong
     * to the request.
     */
    public <T> Outcome<T> execute(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<T> operation) {
        Require.notNull(connection, "connection");
        boolean autoCommit;
        try {
            autoCommit = begin(connection);
        } catch (SQLException e) {
            return beginFailed(e);
        }
        TransactionBoundStore bound = new TransactionBoundStore(store, connection, true, true, keyOrder, true);
        try {
            if (keyOrder != KeyOrder.LAST_NO_LOOKUP) {
                return engine.withStore(bound).execute(key, fingerprint, codec, operation);
            }
            Outcome<T> outcome = engine.withStore(bound).withListener(new HoldingOutcome(engine.listener()))
                    .execute(key, fingerprint, codec, operation);
            if (!bound.mustClaimFirst()) {
                engine.listener().onOutcome(key, outcome);
                return outcome;
            }
            // The plain insert met a record that a claim takes over (expired, or released): the first run was
            // rolled back, and the operation runs again with the key claimed first, as key last claims it.
            bound = new TransactionBoundStore(store, connection, true, true, KeyOrder.LAST);
            return engine.withStore(bound).execute(key, fingerprint, codec, operation);
        } finally {
            endTransaction(connection, key, bound, autoCommit);
        }
    }

    /**
     * {@link #execute} for an operation that finishes after it returns (a filter that claims before the handler
     * runs and records after it, as Jakarta REST's do): the claim is written on {@code connection} before this
     * returns, the transaction commits with the response once the operation's stage completes, on the thread that
     * completes it, and the returned stage completes after that commit (or the rollback). A stage that fails rolls
     * everything back. The connection is the caller's to close once the returned stage has completed.
     */
    public <T> CompletionStage<Outcome<T>> executeAsync(Connection connection, IdempotencyKey key,
            Fingerprint fingerprint, ResponseCodec<T> codec, Operation<? extends CompletionStage<T>> operation) {
        Require.notNull(connection, "connection");
        boolean autoCommit;
        try {
            autoCommit = begin(connection);
        } catch (SQLException e) {
            return CompletableFuture.completedFuture(beginFailed(e));
        }
        TransactionBoundStore bound = new TransactionBoundStore(store, connection, true, true, keyOrder);
        CompletionStage<Outcome<T>> outcome;
        try {
            outcome = engine.withStore(bound).executeAsync(key, fingerprint, codec, operation);
        } catch (RuntimeException e) {
            endTransaction(connection, key, bound, autoCommit);
            throw e;
        }
        return outcome.whenComplete((done, failure) -> endTransaction(connection, key, bound, autoCommit));
    }

    /** Turns auto-commit off, so that the claim begins a transaction; returns whether it was on. */
    private static boolean begin(Connection connection) throws SQLException {
        boolean autoCommit = connection.getAutoCommit();
        if (autoCommit) {
            connection.setAutoCommit(false);
        }
        return autoCommit;
    }

    private <T> Outcome<T> beginFailed(SQLException e) {
        return new Outcome.StoreUnavailable<>(store.failure("begin a transaction", e)
                .withRetryAfter(engine.policy().retryAfter()));
    }

    /** Replays, refusals and failures end here: nothing of theirs may be committed. */
    private void endTransaction(Connection connection, IdempotencyKey key, TransactionBoundStore bound,
            boolean autoCommit) {
        if (!bound.ended()) {
            rollbackQuietly(connection, key);
        }
        if (autoCommit) {
            try {
                connection.setAutoCommit(true);
            } catch (SQLException e) {
                LOG.log(Level.WARNING, () -> "[" + engine.name() + "] could not restore auto-commit: " + e);
            }
        }
    }

    /** How long a duplicate waits for the commit of the request in flight before it is answered in progress. */
    public Duration lockTimeout() {
        return store.lockTimeout();
    }

    /**
     * Runs {@code operation} inside a transaction the caller manages (a Spring
     * {@code @Transactional} method, a transaction template): the claim is written on
     * {@code connection}, the transaction's own, and the response is written into it, but nothing is
     * committed or rolled back here. The claim runs behind a savepoint: a claim that does not claim
     * (a replay, a refusal, a lock timeout) is rolled back to it, so the caller's earlier writes stay. The caller must
     * commit only when {@link Joined#commit()} is true, and roll back otherwise; a failing commit
     * means the outcome must not be reported as a success.
     *
     * <p>When there is something to commit, the engine's listener hears the outcome only once the
     * caller says what became of its transaction ({@link Joined#committed()},
     * {@link Joined#rolledBack()}, {@link Joined#commitFailed}): a result that never committed is
     * not counted as stored.
     *
     * <p>The claim may block up to the lock timeout on a concurrent duplicate; past it the outcome is
     * in progress and only the claim was undone (a MariaDB deadlock, which takes the whole
     * transaction, is a store failure instead). With {@link KeyOrder#LAST} and {@link KeyOrder#LAST_NO_LOOKUP},
     * the record is inserted into the transaction after the operation; if a concurrent attempt's record
     * committed first, the insert aborts the transaction, the outcome is that attempt's response (or 409),
     * and {@link Joined#commit()} is false.
     */
    public <T> Joined<T> join(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<T> operation) {
        return join(connection, key, fingerprint, codec, operation, false, keyOrder, false);
    }

    /**
     * {@link #join} for a transaction the caller has just begun for this request (a transaction manager's
     * new transaction, nothing written in it yet): the claim is its first statement, so it needs no
     * savepoint, two statements fewer. Whatever does not claim may leave the transaction rolled back,
     * which the caller's rollback then finds done; a claim the database refused for a concurrent write
     * (a serialization failure, a deadlock) runs again in a new transaction on the same connection, and
     * replays what that write stored. Anything written on {@code connection} before the call may be lost.
     */
    public <T> Joined<T> joinNew(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<T> operation) {
        return join(connection, key, fingerprint, codec, operation, true, keyOrder, false);
    }

    /**
     * {@link #joinNew} for a caller that can run the operation again in a new transaction of its own. With
     * {@link KeyOrder#LAST_NO_LOOKUP} the record is then written as {@link #execute} writes it, a plain insert,
     * and a key whose record a claim would take over (expired, or released) is left to a second run:
     * {@link Joined#mustRunAgain()} is true, nothing of the run is kept, and the caller rolls its transaction
     * back, begins a new one and calls {@link Joined#runAgain} with its connection, where the key is claimed
     * first. With the other key orders it is {@link #joinNew}, and never asks for a second run.
     */
    public <T> Joined<T> joinNewOrRunAgain(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<T> operation) {
        return join(connection, key, fingerprint, codec, operation, true, keyOrder, true);
    }

    private <T> Joined<T> join(Connection connection, IdempotencyKey key, Fingerprint fingerprint,
            ResponseCodec<T> codec, Operation<T> operation, boolean claimFirst, KeyOrder order, boolean runsAgain) {
        Require.notNull(connection, "connection");
        TransactionBoundStore bound = new TransactionBoundStore(store, connection, false, claimFirst, order,
                runsAgain);
        Outcome<T> outcome = engine.withStore(bound).withListener(new HoldingOutcome(engine.listener()))
                .execute(key, fingerprint, codec, operation);
        if (bound.mustClaimFirst()) {
            // Not an outcome of the key: the run is to be rolled back and made again, and nothing is reported.
            return new Joined<>(engine, key, outcome, false,
                    again -> join(again, key, fingerprint, codec, operation, true, KeyOrder.LAST, false));
        }
        Joined<T> joined = new Joined<>(engine, key, outcome, bound.completed(), null);
        if (!joined.commit()) {
            joined.report(outcome); // a replay, a refusal or a release: final whatever the caller does
        }
        return joined;
    }

    /**
     * What {@link #join} decided, and whether the caller's transaction may commit. When it may, the
     * caller reports what became of it, once: {@link #committed()}, {@link #rolledBack()} or
     * {@link #commitFailed}; until then the engine's listener has not heard the outcome.
     */
    public static final class Joined<T> {
        private final RetrySafe engine;
        private final IdempotencyKey key;
        private final Outcome<T> outcome;
        private final boolean commit;
        /** Non-null when the run must be made again, claimed first, in a new transaction on the given connection. */
        private final Function<Connection, Joined<T>> again;
        private final AtomicBoolean reported = new AtomicBoolean();

        private Joined(RetrySafe engine, IdempotencyKey key, Outcome<T> outcome, boolean commit,
                Function<Connection, Joined<T>> again) {
            this.engine = engine;
            this.key = key;
            this.outcome = outcome;
            this.commit = commit;
            this.again = again;
        }

        /** What became of the key; meaningless while {@link #mustRunAgain()} is true. */
        public Outcome<T> outcome() {
            return outcome;
        }

        /**
         * True only from {@link TransactionalRetrySafe#joinNewOrRunAgain}, when the key's record is one a claim
         * takes over: the caller rolls its transaction back and calls {@link #runAgain} in a new one.
         */
        public boolean mustRunAgain() {
            return again != null;
        }

        /**
         * Runs the operation again on {@code connection}, the new transaction's, with the key claimed first; what
         * it returns is the call's answer, as from {@link TransactionalRetrySafe#joinNew}.
         *
         * @throws IllegalStateException unless {@link #mustRunAgain()}
         */
        public Joined<T> runAgain(Connection connection) {
            if (again == null) {
                throw new IllegalStateException("the run of key " + key.digest() + " need not be made again");
            }
            return again.apply(Require.notNull(connection, "connection"));
        }

        /** True: the response is written into the caller's transaction, which may now commit. */
        public boolean commit() {
            return commit;
        }

        /** The caller's transaction committed: the outcome stands and is reported. */
        public void committed() {
            report(outcome);
        }

        /**
         * The caller rolled its transaction back for a reason of its own: the result was not kept,
         * and it is reported as released (a retry runs the operation again).
         */
        public void rolledBack() {
            report(outcome instanceof Outcome.Executed<T> executed
                    ? new Outcome.Executed<>(executed.value(), executed.attempt(), Outcome.Completion.RELEASED)
                    : outcome);
        }

        /**
         * The caller's commit failed: reported as a store error and the {@code 503} the caller must
         * answer instead, which this returns for it to throw.
         */
        public StoreUnavailableException commitFailed(RuntimeException cause) {
            Require.notNull(cause, "cause");
            StoreUnavailableException failure = new StoreUnavailableException(engine.store().name(),
                    engine.policy().retryAfter(), "the transaction of key " + key.digest() + " did not commit: "
                    + cause.getMessage(), cause);
            if (reported.compareAndSet(false, true)) {
                engine.listener().onStoreError(engine.store().name(), "commit", cause);
                engine.listener().onOutcome(key, new Outcome.StoreUnavailable<>(failure));
            }
            return failure;
        }

        private void report(Outcome<?> reportedOutcome) {
            if (reported.compareAndSet(false, true)) {
                engine.listener().onOutcome(key, reportedOutcome);
            }
        }

        @Override
        public String toString() {
            return "Joined[outcome=" + outcome + ", commit=" + commit + ", mustRunAgain=" + mustRunAgain() + "]";
        }
    }

    /** Passes everything on to the engine's listener but the outcome, which {@link Joined} reports. */
    private record HoldingOutcome(RetrySafeListener listener) implements RetrySafeListener {
        @Override
        public void onTakeover(IdempotencyKey key, int attempt) {
            listener.onTakeover(key, attempt);
        }

        @Override
        public void onLeaseLost(IdempotencyKey key) {
            listener.onLeaseLost(key);
        }

        @Override
        public void onStoreError(String storeName, String operation, RuntimeException error) {
            listener.onStoreError(storeName, operation, error);
        }

        @Override
        public void onStoreLatency(String storeName, String operation, long nanos) {
            listener.onStoreLatency(storeName, operation, nanos);
        }

        @Override
        public void onInvalidKey(InvalidKeyException error) {
            listener.onInvalidKey(error);
        }
    }

    private void rollbackQuietly(Connection connection, IdempotencyKey key) {
        try {
            connection.rollback();
        } catch (SQLException e) {
            LOG.log(Level.WARNING, () -> "[" + engine.name() + "] rollback after key " + key.digest() + " failed: " + e);
        }
    }

    public RetrySafe engine() {
        return engine;
    }

    /** The store's data source: where this mode's transactions take their connections unless told otherwise. */
    public DataSource dataSource() {
        return store.dataSource();
    }
}
