package io.retrysafe.jdbc;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.internal.SqlDialect;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Records in a PostgreSQL or MariaDB table. Used directly, it is the <em>standalone</em> store:
 * each call is its own short transaction, so the claim is committed before the operation runs
 * (for side effects outside the database). Wrapped by {@link TransactionalRetrySafe}, the claim,
 * the application's writes and the response commit in one transaction.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
 * store.createSchema();
 * RetrySafe retrySafe = RetrySafe.builder(store).build();
 * }</pre>
 */
public final class JdbcIdempotencyStore implements IdempotencyStore {
    public static final String DEFAULT_TABLE = "retrysafe_record";
    public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(5);

    private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");
    private static final Duration RETRY_AFTER = Duration.ofSeconds(1);

    private final DataSource dataSource;
    private final String table;
    private final Duration lockTimeout;
    private final String name;
    private volatile SqlDialect sql;
    private volatile JdbcDialect dialect;

    private JdbcIdempotencyStore(Builder b) {
        this.dataSource = b.dataSource;
        this.table = b.table == null ? DEFAULT_TABLE : b.table;
        this.lockTimeout = b.lockTimeout == null ? DEFAULT_LOCK_TIMEOUT : b.lockTimeout;
        this.dialect = b.dialect;
        this.sql = b.dialect == null ? null : b.dialect.forTable(table);
        this.name = b.name;
    }

    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    public DataSource dataSource() {
        return dataSource;
    }

    public String table() {
        return table;
    }

    /** How long a claim waits for a concurrent holder's transaction before answering in progress. */
    public Duration lockTimeout() {
        return lockTimeout;
    }

    public JdbcDialect dialect() {
        sql();
        return dialect;
    }

    @Override
    public String name() {
        return name != null ? name : "jdbc:" + table;
    }

    /** The DDL for this store's table and index, as shipped in {@code schema-<dialect>.sql}. */
    public String schema() {
        return sql().schema();
    }

    /** Creates the table and its index if they do not exist; safe to call on every start. */
    public void createSchema() {
        run(c -> {
            try (Statement st = c.createStatement()) {
                for (String ddl : statements(schema())) {
                    st.execute(ddl);
                }
            }
            return null;
        }, "createSchema");
    }

    static String[] statements(String script) {
        String withoutComments = script.replaceAll("(?m)^\\s*--.*$", "");
        return java.util.Arrays.stream(withoutComments.split(";\\s*(\\r?\\n|$)"))
                .map(String::strip).filter(s -> !s.isEmpty()).toArray(String[]::new);
    }

    /** The purge job for this store's table. */
    public JdbcPurger.Builder purger() {
        return JdbcPurger.builder(this);
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        return run(c -> sql().tryClaim(c, request, lockTimeout), "claim");
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        return run(c -> sql().complete(c, key, token, response, retention, false), "complete")
                ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        return run(c -> sql().release(c, key, token), "release") ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        return run(c -> sql().inspect(c, key), "inspect");
    }

    @Override
    public int purgeExpired(int limit) {
        Require.between(limit, 1, Integer.MAX_VALUE, "limit");
        return run(c -> sql().purgeBatch(c, limit), "purge");
    }

    SqlDialect sql() {
        SqlDialect s = sql;
        if (s == null) {
            synchronized (this) {
                if (sql == null) {
                    try (Connection c = dataSource.getConnection()) {
                        dialect = JdbcDialect.detect(c);
                    } catch (SQLException e) {
                        throw failure("detect dialect", e);
                    }
                    sql = dialect.forTable(table);
                }
                s = sql;
            }
        }
        return s;
    }

    interface SqlCall<R> {
        R apply(Connection c) throws SQLException;
    }

    /** One call, one short transaction: committed before it returns, whatever the pool's default. */
    private <R> R run(SqlCall<R> call, String operation) {
        SqlDialect dialectSql = sql();
        try (Connection c = dataSource.getConnection()) {
            if (!c.getAutoCommit()) {
                try {
                    R result = call.apply(c);
                    c.commit();
                    return result;
                } catch (SQLException | RuntimeException e) {
                    c.rollback();
                    throw e;
                }
            }
            return call.apply(c);
        } catch (SQLException e) {
            throw failure(operation + " on " + dialectSql.table(), e);
        }
    }

    StoreUnavailableException failure(String what, SQLException e) {
        return new StoreUnavailableException(name(), RETRY_AFTER,
                "idempotency store " + name() + " failed to " + what + ": " + e.getMessage() + " (SQLState "
                        + e.getSQLState() + ")", e);
    }

    @Override
    public String toString() {
        return "JdbcIdempotencyStore[table=" + table + ", dialect=" + dialect + ", lockTimeout=" + lockTimeout + "]";
    }

    /** Builds a {@link JdbcIdempotencyStore}; each value may be set once. */
    public static final class Builder {
        private final DataSource dataSource;
        private JdbcDialect dialect;
        private String table;
        private Duration lockTimeout;
        private String name;

        private Builder(DataSource dataSource) {
            this.dataSource = Require.notNull(dataSource, "dataSource");
        }

        /** The database's dialect; detected from the first connection when not set. */
        public Builder dialect(JdbcDialect dialect) {
            Require.unset(this.dialect, "dialect");
            this.dialect = Require.notNull(dialect, "dialect");
            return this;
        }

        /** The table, optionally schema-qualified: letters, digits and underscores only, as it is put into SQL. */
        public Builder table(String table) {
            Require.unset(this.table, "table");
            Require.notNull(table, "table");
            if (!TABLE.matcher(table).matches()) {
                throw new IllegalArgumentException("table must be an unquoted SQL identifier, optionally "
                        + "schema-qualified (letters, digits, underscores; at most 63 each), but was \"" + table + "\"");
            }
            this.table = table;
            return this;
        }

        /**
         * How long a claim waits on a concurrent transaction holding the same key (in transactional
         * mode: the duplicate's wait for the first request to commit) before answering in progress.
         * PostgreSQL counts milliseconds; MariaDB whole seconds, rounded up.
         */
        public Builder lockTimeout(Duration lockTimeout) {
            Require.unset(this.lockTimeout, "lockTimeout");
            this.lockTimeout = Require.atLeastOneMilli(lockTimeout, "lockTimeout");
            return this;
        }

        public Builder name(String name) {
            Require.unset(this.name, "name");
            this.name = Require.notNull(name, "name");
            return this;
        }

        public JdbcIdempotencyStore build() {
            return new JdbcIdempotencyStore(this);
        }
    }
}
