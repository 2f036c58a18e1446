package io.retrysafe.jdbc;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * Presents transactional mode to the store contract: each claim opens a transaction on its own
 * connection through the same {@link TransactionBoundStore} that {@link TransactionalRetrySafe}
 * uses, and the holder's completion commits it or its release rolls it back. A token that holds
 * no open transaction is stale, and goes to the standalone statements, which fence it.
 */
final class TransactionalStoreAdapter implements IdempotencyStore, AutoCloseable {
    private record Held(Connection connection, TransactionBoundStore bound) {
    }

    private final JdbcIdempotencyStore store;
    private final DataSource dataSource;
    private final Map<OwnerToken, Held> held = new ConcurrentHashMap<>();

    TransactionalStoreAdapter(JdbcIdempotencyStore store, DataSource dataSource) {
        this.store = store;
        this.dataSource = dataSource;
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        Connection c = null;
        try {
            c = dataSource.getConnection();
            c.setAutoCommit(false);
            TransactionBoundStore bound = new TransactionBoundStore(store, c, true, true, KeyOrder.FIRST);
            ClaimResult result = bound.tryClaim(request);
            if (result instanceof ClaimResult.Claimed) {
                held.put(request.token(), new Held(c, bound));
                c = null;
            }
            return result;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        } finally {
            closeQuietly(c, true);
        }
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        Held h = held.remove(token);
        if (h == null) {
            return store.complete(key, token, response, retention);
        }
        try {
            return h.bound().complete(key, token, response, retention);
        } finally {
            closeQuietly(h.connection(), !h.bound().ended());
        }
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        Held h = held.remove(token);
        if (h == null) {
            return store.release(key, token);
        }
        try {
            return h.bound().release(key, token);
        } finally {
            closeQuietly(h.connection(), false);
        }
    }

    /** A crash of the holder: its transaction rolls back, taking the claim with it. */
    void abandon(OwnerToken token) {
        Held h = held.remove(token);
        if (h != null) {
            closeQuietly(h.connection(), true);
        }
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        return store.inspect(key);
    }

    @Override
    public int purgeExpired(int limit) {
        return store.purgeExpired(limit);
    }

    @Override
    public String name() {
        return "transactional:" + store.name();
    }

    @Override
    public void close() {
        held.keySet().forEach(this::abandon);
    }

    private static void closeQuietly(Connection c, boolean rollback) {
        if (c == null) {
            return;
        }
        try {
            if (rollback) {
                c.rollback();
            }
            c.setAutoCommit(true);
        } catch (SQLException ignored) {
            // the connection is being discarded with its transaction
        }
        try {
            c.close();
        } catch (SQLException ignored) {
            // nothing more to do with a connection that fails to close
        }
    }
}
