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
import io.retrysafe.sql.TableNames;
import io.retrysafe.sql.TableStoreOptions;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import javax.sql.DataSource;

/**
 * Records in a PostgreSQL or MariaDB table. Used directly, it is the <em>standalone</em> store:
 * each call is its own short transaction, so the claim is committed before the operation runs
 * (for side effects outside the database). Wrapped by {@link TransactionalRetrySafe}, the claim,
 * the application's writes and the response commit in one transaction.
 *
 * <pre>{@code
 * JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).build();
 * store.createSchema(); // or the shipped Flyway / Liquibase migration (docs/schema.md)
 * RetrySafe retrySafe = RetrySafe.builder(store).build();
 * }</pre>
 */
public final class JdbcIdempotencyStore implements IdempotencyStore {
    public static final String DEFAULT_TABLE = TableStoreOptions.DEFAULT_TABLE;
    public static final Duration DEFAULT_LOCK_TIMEOUT = TableStoreOptions.DEFAULT_LOCK_TIMEOUT;
    /** No bound: every claim may wait up to the lock timeout. */
    public static final int DEFAULT_MAX_WAITING_CLAIMS = Integer.MAX_VALUE;
    /** The wait of a claim past {@link #maxWaitingClaims()}: as good as none (MariaDB rounds it up to one second). */
    static final Duration NO_WAIT = Duration.ofMillis(1);

    private static final Duration RETRY_AFTER = Duration.ofSeconds(1);

    private final DataSource dataSource;
    private final String table;
    private final Duration lockTimeout;
    private final JdbcLayout layout;
    private final String name;
    private final int maxWaitingClaims;
    private final Semaphore waitingClaims;
    private volatile SqlDialect sql;
    private volatile JdbcDialect dialect;

    private JdbcIdempotencyStore(Builder b) {
        this.dataSource = b.dataSource;
        this.table = b.options.table();
        this.lockTimeout = b.options.lockTimeout();
        this.layout = b.layout == null ? JdbcLayout.STANDARD : b.layout;
        this.dialect = b.dialect;
        this.sql = b.dialect == null ? null : b.dialect.forTable(table, layout);
        this.name = b.options.nameOr("jdbc");
        this.maxWaitingClaims = b.maxWaitingClaims == null ? DEFAULT_MAX_WAITING_CLAIMS : b.maxWaitingClaims;
        this.waitingClaims = new Semaphore(maxWaitingClaims);
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

    /** How many claims on this store may wait up to the lock timeout at once; the others do not wait. */
    public int maxWaitingClaims() {
        return maxWaitingClaims;
    }

    /**
     * Runs {@code claim} with the lock timeout it may wait: the store's, while fewer than
     * {@link #maxWaitingClaims()} claims are running, else {@link #NO_WAIT}. A claim holds a pooled
     * connection while it waits on a key another transaction holds: bounding how many may wait keeps
     * duplicates arriving from other instances from holding more than that share of the pool; the
     * rest answer in progress (409) at once.
     */
    <R> R boundedWait(ClaimCall<R> claim) throws java.sql.SQLException {
        boolean permitted = waitingClaims.tryAcquire();
        try {
            return claim.run(permitted ? lockTimeout : NO_WAIT);
        } finally {
            if (permitted) {
                waitingClaims.release();
            }
        }
    }

    @FunctionalInterface
    interface ClaimCall<R> {
        R run(Duration lockTimeout) throws java.sql.SQLException;
    }

    /** How the table is laid out: {@link JdbcLayout#STANDARD} unless the builder said otherwise. */
    public JdbcLayout layout() {
        return layout;
    }

    public JdbcDialect dialect() {
        sql();
        return dialect;
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * The DDL for this store's table and index, as shipped in {@code schema-<dialect>.sql}
     * ({@code schema-postgresql-partitioned.sql}: also the functions every write goes through). The
     * shipped migrations ({@code db/retrysafe/...}) are these scripts for the default table.
     */
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

    /**
     * The script's statements: each ends with a semicolon at the end of a line, except inside a
     * {@code $$}-quoted function body. Comment lines outside bodies are dropped.
     */
    static String[] statements(String script) {
        java.util.List<String> out = new java.util.ArrayList<>();
        StringBuilder current = new StringBuilder();
        boolean inBody = false;
        for (String line : script.split("\\r?\\n")) {
            if (!inBody && line.strip().startsWith("--")) {
                continue;
            }
            if ((line.split("\\$\\$", -1).length - 1) % 2 == 1) {
                inBody = !inBody;
            }
            current.append(line).append('\n');
            if (!inBody && line.stripTrailing().endsWith(";")) {
                add(out, current);
            }
        }
        add(out, current);
        return out.toArray(String[]::new);
    }

    private static void add(java.util.List<String> out, StringBuilder statement) {
        String s = statement.toString().strip();
        statement.setLength(0);
        if (s.endsWith(";")) {
            s = s.substring(0, s.length() - 1).strip();
        }
        if (!s.isEmpty()) {
            out.add(s);
        }
    }

    /**
     * The purge job for this store's table. With {@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY} it also
     * maintains the partitions, with {@link #partitions()}' defaults unless given another maintainer.
     */
    public JdbcPurger.Builder purger() {
        return JdbcPurger.builder(this);
    }

    /** The partition maintenance job; only for {@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY}. */
    public PartitionMaintainer.Builder partitions() {
        if (layout != JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
            throw new IllegalStateException("partitions need layout " + JdbcLayout.PARTITIONED_BY_EXPIRY_DAY
                    + ", but store " + name() + " has layout " + layout);
        }
        return PartitionMaintainer.builder(this);
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        return run(c -> boundedWait(wait -> sql().requests().tryClaim(c, request, wait, null, false)), "claim");
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        return run(c -> sql().requests().complete(c, key, token, response, retention, false), "complete")
                ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        return run(c -> sql().requests().release(c, key, token), "release")
                ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public boolean canRenewLease() {
        return true;
    }

    @Override
    public FencedWrite renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        Require.positive(leaseTtl, "leaseTtl");
        return run(c -> sql().requests().renewLease(c, key, token, leaseTtl), "renew lease")
                ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        return run(c -> sql().operators().inspect(c, key), "inspect");
    }

    @Override
    public int purgeExpired(int limit) {
        Require.between(limit, 1, Integer.MAX_VALUE, "limit");
        return run(c -> sql().maintenance().purgeBatch(c, limit), "purge");
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
                    sql = dialect.forTable(table, layout);
                }
                s = sql;
            }
        }
        return s;
    }

    interface SqlCall<R> {
        R apply(Connection c) throws SQLException;
    }

    /**
     * One call, one short transaction: committed before it returns, whatever the pool's default. Every call is
     * correct under auto-commit, each statement its own transaction. On PostgreSQL a connection with auto-commit
     * off runs the call with it on: the driver switches for nothing when no transaction is open (as on a
     * connection just taken from a pool), and each statement then commits in its own round trip, where a
     * {@code COMMIT} would be one more. MariaDB's driver sends a statement to switch, so it commits.
     */
    <R> R run(SqlCall<R> call, String operation) {
        SqlDialect dialectSql = sql();
        try (Connection c = dataSource.getConnection()) {
            if (c.getAutoCommit()) {
                return call.apply(c);
            }
            boolean switched = dialect == JdbcDialect.POSTGRESQL;
            if (switched) {
                c.setAutoCommit(true);
            }
            R result;
            try {
                result = call.apply(c);
                if (!switched) {
                    c.commit();
                }
            } catch (SQLException | RuntimeException e) {
                try {
                    if (switched) {
                        c.setAutoCommit(false);
                    } else {
                        c.rollback();
                    }
                } catch (SQLException undo) {
                    e.addSuppressed(undo); // a connection the failure broke: the failure is the news
                }
                throw e;
            }
            if (switched) {
                c.setAutoCommit(false);
            }
            return result;
        } catch (SQLException e) {
            throw failure(operation + " on " + dialectSql.table(), e);
        }
    }

    StoreUnavailableException failure(String what, SQLException e) {
        return new StoreUnavailableException(name(), RETRY_AFTER,
                "idempotency store " + name() + " failed to " + what + ": " + e.getMessage() + " (SQLState "
                        + e.getSQLState() + ")", e, isUnreachable(e));
    }

    /**
     * Whether the database could not be reached, as opposed to answering with an error (a missing
     * table, no permission, bad data): no connection from the pool, a connection exception (SQLState
     * class 08), a server shutting down or not accepting connections yet (57P01–57P03), a timeout.
     */
    static boolean isUnreachable(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.sql.SQLTransientConnectionException || t instanceof java.sql.SQLRecoverableException
                    || t instanceof java.sql.SQLNonTransientConnectionException
                    || t instanceof java.sql.SQLTimeoutException || t instanceof java.io.IOException) {
                return true;
            }
            if (t instanceof SQLException sql && TableNames.isUnreachableState(sql.getSQLState())) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return "JdbcIdempotencyStore[table=" + table + ", dialect=" + dialect + ", layout=" + layout + ", lockTimeout="
                + lockTimeout + ", maxWaitingClaims=" + maxWaitingClaims + "]";
    }

    /** Builds a {@link JdbcIdempotencyStore}; each value may be set once. */
    public static final class Builder {
        private final DataSource dataSource;
        private final TableStoreOptions options = new TableStoreOptions();
        private JdbcDialect dialect;
        private Integer maxWaitingClaims;
        private JdbcLayout layout;

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
            options.table(table);
            return this;
        }

        /**
         * How long a claim waits on a concurrent transaction holding the same key (in transactional
         * mode: the duplicate's wait for the first request to commit) before answering in progress.
         * PostgreSQL counts milliseconds; MariaDB whole seconds, rounded up.
         */
        public Builder lockTimeout(Duration lockTimeout) {
            options.lockTimeout(lockTimeout);
            return this;
        }

        /**
         * How many claims of this store may wait on a key held by another transaction at once, each
         * up to the lock timeout, holding a pooled connection; a claim beyond it does not wait and
         * answers in progress. Unbounded by default; a share of the pool (a quarter, a half) keeps a
         * burst of duplicates from other instances from taking the whole of it.
         */
        public Builder maxWaitingClaims(int maxWaitingClaims) {
            Require.unset(this.maxWaitingClaims, "maxWaitingClaims");
            this.maxWaitingClaims = Require.between(maxWaitingClaims, 1, Integer.MAX_VALUE, "maxWaitingClaims");
            return this;
        }

        /**
         * How the table is laid out; {@link JdbcLayout#STANDARD} by default. The partitioned layout
         * needs PostgreSQL and a table name of at most {@value #MAX_PARTITIONED_NAME} characters
         * (without its schema), as partitions and functions are named after it.
         */
        public Builder layout(JdbcLayout layout) {
            Require.unset(this.layout, "layout");
            this.layout = Require.notNull(layout, "layout");
            return this;
        }

        /** The store's name in logs, metrics and errors; not blank; {@code "jdbc:" + table} by default. */
        public Builder name(String name) {
            options.name(name);
            return this;
        }

        /** Longest table name (without its schema) of the partitioned layout: 63 less "_force_release". */
        public static final int MAX_PARTITIONED_NAME = 49;

        public JdbcIdempotencyStore build() {
            if (layout == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
                if (dialect != null && dialect != JdbcDialect.POSTGRESQL) {
                    throw new IllegalArgumentException("layout " + layout + " needs PostgreSQL, but the dialect is "
                            + dialect);
                }
                String t = options.table();
                String simple = t.substring(t.indexOf('.') + 1);
                if (simple.length() > MAX_PARTITIONED_NAME) {
                    throw new IllegalArgumentException("with layout " + layout + " the table name must be at most "
                            + MAX_PARTITIONED_NAME + " characters (partitions and functions are named after it), but was \""
                            + simple + "\" (" + simple.length() + ")");
                }
            }
            return new JdbcIdempotencyStore(this);
        }
    }
}
