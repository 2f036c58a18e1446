package io.retrysafe.r2dbc;

import io.r2dbc.spi.Connection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.sql.TableNames;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import reactor.core.publisher.Mono;

/**
 * The store as seen from inside one R2DBC transaction: the claim is written into it, the completion
 * writes the response into it (and commits it, when the transaction is this mode's own), and a
 * release rolls it back, taking the claim with it. One instance per call; its steps run one after
 * the other, as the engine makes them.
 */
final class TransactionBoundStore implements AsyncIdempotencyStore {
    private static final System.Logger LOG = System.getLogger(TransactionalR2dbcRetrySafe.class.getName());
    private static final String SAVEPOINT = "retrysafe_claim";

    private final R2dbcIdempotencyStore store;
    private final PostgresStatements sql;
    private final Connection connection;
    private final boolean ownsTransaction;
    private volatile boolean ended;
    private volatile boolean completed;

    /**
     * @param ownsTransaction true: the completion commits and a release rolls back; false: the
     *     caller's transaction manager does both, and this store only writes
     */
    TransactionBoundStore(R2dbcIdempotencyStore store, Connection connection, boolean ownsTransaction) {
        this.store = store;
        this.sql = store.sql();
        this.connection = connection;
        this.ownsTransaction = ownsTransaction;
    }

    /** True once the transaction was committed with its response or rolled back by a release. */
    boolean ended() {
        return ended;
    }

    /** True once the response was written into the transaction (and, when it owns it, committed). */
    boolean completed() {
        return completed;
    }

    /** False: the completion is the transaction's, and a failed one rolls the operation's writes back. */
    @Override
    public boolean isStandalone() {
        return false;
    }

    @Override
    public CompletionStage<ClaimResult> tryClaim(ClaimRequest request) {
        Mono<ClaimResult> claim = ownsTransaction ? claimOwned(request, 0) : claimJoined(request);
        return claim.onErrorMap(e -> store.failure("claim", e)).toFuture();
    }

    /** The claim as its transaction's first statement: whatever the database aborts, nothing else is lost. */
    private Mono<ClaimResult> claimOwned(ClaimRequest request, int rollbacks) {
        return sql.tryClaim(connection, request, store.lockTimeout(), true)
                // The caller rolls all of it back.
                .onErrorResume(PostgresStatements::isLockTimeout,
                        e -> Mono.just(new ClaimResult.InProgress(store.lockTimeout())))
                // A record written after this transaction's snapshot (REPEATABLE READ, SERIALIZABLE) or a
                // deadlock: a new transaction, whose snapshot sees the record, claims again.
                .onErrorResume(e -> PostgresStatements.mustRunAgain(e) && rollbacks < TableNames.ROLLBACK_RETRIES,
                        e -> Mono.from(connection.rollbackTransaction())
                                .then(Mono.from(connection.beginTransaction()))
                                .then(Mono.defer(() -> claimOwned(request, rollbacks + 1))));
    }

    /**
     * The claim inside the caller's transaction, behind a savepoint: whatever does not claim (a lock
     * timeout that aborted the transaction, a replay, a refusal, a failure) is undone back to it, the
     * lock bound included, and the caller's earlier writes stay, for it to commit or roll back.
     */
    private Mono<ClaimResult> claimJoined(ClaimRequest request) {
        Mono<Void> undo = Mono.from(connection.rollbackTransactionToSavepoint(SAVEPOINT));
        return Mono.from(connection.createSavepoint(SAVEPOINT))
                .then(sql.tryClaim(connection, request, store.lockTimeout(), true)
                        .onErrorResume(TransactionBoundStore::inProgress,
                                e -> undo.then(Mono.just(new ClaimResult.InProgress(store.lockTimeout()))))
                        .onErrorResume(e -> !inProgress(e), e -> undo
                                .onErrorResume(rollback -> {
                                    e.addSuppressed(rollback); // gone with the transaction: the caller must roll back
                                    return Mono.empty();
                                })
                                .then(Mono.error(e))))
                .flatMap(result -> result instanceof ClaimResult.Claimed
                        ? Mono.from(connection.releaseSavepoint(SAVEPOINT)).thenReturn(result)
                        : undo.thenReturn(result));
    }

    /**
     * A joined claim's failure that means the key is busy: past the lock bound, or a record written after
     * the snapshot of the caller's transaction (REPEATABLE READ, SERIALIZABLE), which can never see it.
     */
    private static boolean inProgress(Throwable e) {
        return PostgresStatements.isLockTimeout(e) || PostgresStatements.mustRunAgain(e);
    }

    @Override
    public CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention) {
        Mono<Boolean> written = sql.complete(connection, key, token, response, retention, true);
        if (ownsTransaction) {
            written = written.flatMap(w -> Mono.from(connection.commitTransaction()).thenReturn(w));
        }
        return written.map(w -> {
            ended = ownsTransaction;
            completed = w;
            if (!w) {
                // The claim's row lock makes this unreachable unless something else deleted the record
                // inside the transaction; the work is committed, so say so loudly.
                LOG.log(Level.ERROR, "[" + store.name() + "] key " + key.digest()
                        + " was committed without its record: the record vanished inside its own transaction");
            }
            return R2dbcIdempotencyStore.fenced(w);
        }).onErrorMap(e -> store.failure(ownsTransaction ? "commit the transaction with its response"
                : "store the response", e)).toFuture();
    }

    @Override
    public CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token) {
        if (!ownsTransaction) {
            // A caller's transaction is rolled back by its manager: the outcome says so.
            return Mono.just(FencedWrite.COMMITTED).toFuture();
        }
        return Mono.from(connection.rollbackTransaction())
                .then(Mono.fromRunnable(() -> ended = true))
                .thenReturn(FencedWrite.COMMITTED)
                .onErrorMap(e -> store.failure("roll back", e))
                .toFuture();
    }

    @Override
    public CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key) {
        return sql.inspect(connection, key).onErrorMap(e -> store.failure("inspect", e)).toFuture();
    }

    @Override
    public CompletionStage<Integer> purgeExpired(int limit) {
        return store.purgeExpired(limit);
    }

    @Override
    public String name() {
        return store.name();
    }
}
