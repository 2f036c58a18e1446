package io.retrysafe.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.tck.TransactionalStoreContract;
import io.retrysafe.testservices.TestDatabases;
import java.time.Duration;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The store contract in transactional mode on a JDBC database: each claim is the first statement of an
 * open transaction, its completion commits it, and its release or abandonment rolls it back. A subclass
 * opens its database once per class ({@link #open}) at the isolation level it runs.
 */
abstract class JdbcTransactionalContract extends TransactionalStoreContract {

    /** A pool with a connection per racing holder, and the adapter the contract sees. */
    record Opened(HikariDataSource pool, TransactionalStoreAdapter adapter) implements AutoCloseable {
        @Override
        public void close() {
            adapter.close();
            pool.close();
        }
    }

    /**
     * The test PostgreSQL database with the application's transactions at {@code isolation} (a JDBC
     * {@code TRANSACTION_*} name; null for the database's default), and the store {@code store} builds on it.
     */
    static Opened postgres(String isolation, Function<DataSource, JdbcIdempotencyStore> store) {
        return open(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(), TestDatabases.postgresPassword(),
                isolation, store);
    }

    /** The test MariaDB database, as {@link #postgres}. */
    static Opened mariadb(String isolation, Function<DataSource, JdbcIdempotencyStore> store) {
        return open(TestDatabases.mariadbJdbcUrl(), TestDatabases.mariadbUser(), TestDatabases.mariadbPassword(),
                isolation, store);
    }

    private static Opened open(String url, String user, String password, String isolation,
            Function<DataSource, JdbcIdempotencyStore> store) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        // A holder keeps its connection until it completes, so the races need one per thread.
        config.setMaximumPoolSize(40);
        if (isolation != null) {
            config.setTransactionIsolation(isolation);
        }
        HikariDataSource pool = new HikariDataSource(config);
        return new Opened(pool, new TransactionalStoreAdapter(store.apply(pool), pool));
    }

    /** The store on the standalone contract's PostgreSQL table, a duplicate waiting at most a second. */
    static JdbcIdempotencyStore postgresStore(DataSource pool) {
        return created(JdbcIdempotencyStore.builder(pool).dialect(JdbcDialect.POSTGRESQL)
                .table(PostgresStandaloneContractIT.TABLE).lockTimeout(Duration.ofSeconds(1)).build());
    }

    /** The store on the standalone contract's MariaDB table, as {@link #postgresStore}. */
    static JdbcIdempotencyStore mariadbStore(DataSource pool) {
        return created(JdbcIdempotencyStore.builder(pool).dialect(JdbcDialect.MARIADB)
                .table(MariaDbStandaloneContractIT.TABLE).lockTimeout(Duration.ofSeconds(1)).build());
    }

    private static JdbcIdempotencyStore created(JdbcIdempotencyStore store) {
        store.createSchema();
        return store;
    }

    /** What this class opened. */
    protected abstract Opened opened();

    @Override
    protected IdempotencyStore store() {
        return opened().adapter();
    }

    @Override
    protected void abandon(OwnerToken token) {
        opened().adapter().abandon(token);
    }
}
