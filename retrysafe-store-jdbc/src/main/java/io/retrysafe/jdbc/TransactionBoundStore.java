package io.retrysafe.jdbc;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.internal.SqlDialect;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.lang.System.Logger.Level;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;

/**
 * The store as seen from inside one application transaction: the claim is the transaction's first
 * statement, the completion commits it, and a release rolls it back, taking the claim with it.
 * One instance per {@link TransactionalRetrySafe#execute} call; not thread-safe.
 */
final class TransactionBoundStore implements IdempotencyStore {
    private static final System.Logger LOG = System.getLogger(TransactionalRetrySafe.class.getName());

    private final JdbcIdempotencyStore store;
    private final SqlDialect sql;
    private final Connection connection;
    private boolean ended;

    TransactionBoundStore(JdbcIdempotencyStore store, Connection connection) {
        this.store = store;
        this.sql = store.sql();
        this.connection = connection;
    }

    /** True once the transaction was committed with its response or rolled back by a release. */
    boolean ended() {
        return ended;
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        try {
            return sql.tryClaim(connection, request, store.lockTimeout());
        } catch (SQLException e) {
            throw store.failure("claim", e);
        }
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        boolean written;
        try {
            written = sql.complete(connection, key, token, response, retention, true);
        } catch (SQLException e) {
            // Not committed: the caller rolls back, and the client must not see a success.
            throw store.failure("commit the transaction with its response", e);
        }
        ended = true;
        if (!written) {
            // The claim's row lock makes this unreachable unless something else deleted the record
            // inside the transaction; the work is committed, so say so loudly.
            LOG.log(Level.ERROR, "[" + store.name() + "] key " + key.digest()
                    + " was committed without its record: the record vanished inside its own transaction");
            return FencedWrite.LEASE_LOST;
        }
        return FencedWrite.COMMITTED;
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        try {
            connection.rollback();
        } catch (SQLException e) {
            throw store.failure("roll back", e);
        }
        ended = true;
        return FencedWrite.COMMITTED;
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        try {
            return sql.inspect(connection, key);
        } catch (SQLException e) {
            throw store.failure("inspect", e);
        }
    }

    @Override
    public int purgeExpired(int limit) {
        return store.purgeExpired(limit);
    }

    @Override
    public String name() {
        return store.name();
    }
}
