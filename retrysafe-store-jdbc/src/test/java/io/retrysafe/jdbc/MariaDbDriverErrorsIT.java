package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransactionRollbackException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.mariadb.jdbc.MariaDbDataSource;

/**
 * What MariaDB Connector/J reports for the two lock errors the MariaDB dialect tells apart, and what
 * each leaves of the transaction: checked against the real server, so that a driver or server upgrade
 * that changes them fails here rather than turning a duplicate request into a 503.
 */
class MariaDbDriverErrorsIT {
    private static final String TABLE = "rs_mariadb_driver_it";
    private static DataSource ds;
    private static ExecutorService pool;

    @BeforeAll
    static void setUp() {
        ds = TestDatabases.mariadb();
        pool = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }

    @BeforeEach
    void twoRows() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + TABLE + " (k INT PRIMARY KEY, v INT NOT NULL) ENGINE = InnoDB");
            st.execute("REPLACE INTO " + TABLE + " VALUES (1, 0), (2, 0)");
        }
    }

    private static void set(Connection c, int k, int v) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("UPDATE " + TABLE + " SET v = ? WHERE k = ?")) {
            ps.setInt(1, v);
            ps.setInt(2, k);
            ps.executeUpdate();
        }
    }

    private static int value(int k) throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT v FROM " + TABLE + " WHERE k = ?")) {
            ps.setInt(1, k);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private static long connectionId(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT CONNECTION_ID()")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static boolean waitingOnALock(long connectionId) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'")) {
            ps.setLong(1, connectionId);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1) > 0;
            }
        }
    }

    @Test
    void aLockWaitPastTheBoundIs1205AndRollsBackOnlyTheStatement() throws SQLException {
        try (Connection holder = ds.getConnection(); Connection waiter = ds.getConnection()) {
            holder.setAutoCommit(false);
            waiter.setAutoCommit(false);
            set(holder, 1, 1);
            set(waiter, 2, 2);

            SQLException e = catchThrowableOfType(SQLException.class, () -> {
                try (Statement st = waiter.createStatement()) {
                    st.executeUpdate("SET STATEMENT innodb_lock_wait_timeout = 1 FOR UPDATE " + TABLE + " SET v = 2 WHERE k = 1");
                }
            });

            assertThat((Throwable) e).as("a lock wait timeout").isNotNull().isNotInstanceOf(SQLTransactionRollbackException.class);
            assertThat(e.getErrorCode()).as("vendor code").isEqualTo(1205);
            assertThat(e.getSQLState()).as("SQLState").isEqualTo("HY000");
            holder.rollback();
            waiter.commit();
        }
        assertThat(value(2)).as("the waiter's earlier write survived the timeout and committed").isEqualTo(2);
        assertThat(value(1)).isZero();
    }

    @Test
    void aDeadlockIs1213With40001AndRollsBackTheVictimsWholeTransaction() throws Exception {
        try (Connection one = ds.getConnection(); Connection two = ds.getConnection()) {
            one.setAutoCommit(false);
            two.setAutoCommit(false);
            set(one, 1, 1);
            set(two, 2, 2);
            long oneId = connectionId(one);
            Future<?> oneCrosses = pool.submit(() -> {
                set(one, 2, 1);
                return null;
            });
            await().atMost(Duration.ofSeconds(10)).until(() -> oneCrosses.isDone() || waitingOnALock(oneId));

            SQLException e = catchThrowableOfType(SQLException.class, () -> set(two, 1, 2));
            int survivor = 2;
            if (e == null) {
                // InnoDB chose the other transaction as the victim.
                Throwable cause = catchThrowableOfType(java.util.concurrent.ExecutionException.class,
                        () -> oneCrosses.get(10, TimeUnit.SECONDS)).getCause();
                assertThat(cause).isInstanceOf(SQLException.class);
                e = (SQLException) cause;
                two.commit();
            } else {
                oneCrosses.get(10, TimeUnit.SECONDS);
                one.commit();
                survivor = 1;
            }

            assertThat((Throwable) e).as("a deadlock").isInstanceOf(SQLTransactionRollbackException.class);
            assertThat(e.getErrorCode()).as("vendor code").isEqualTo(1213);
            assertThat(e.getSQLState()).as("SQLState").isEqualTo("40001");
            assertThat(value(1)).as("row 1: only the surviving transaction's writes").isEqualTo(survivor);
            assertThat(value(2)).as("row 2: only the surviving transaction's writes").isEqualTo(survivor);
        }
    }

    /**
     * A store's call on a connection with auto-commit off that the server ended: the store reports the call's
     * failure, not the one of the rollback that then meets a closed connection.
     */
    @Test
    void aCallOnAConnectionTheServerEndedReportsWhyNotThatItIsClosed() throws Exception {
        String table = "rs_mariadb_ended_it";
        JdbcIdempotencyStore.builder(ds).table(table).build().createSchema();
        try (Connection physical = DriverManager.getConnection(TestDatabases.mariadbJdbcUrl(),
                TestDatabases.mariadbUser(), TestDatabases.mariadbPassword())) {
            physical.setAutoCommit(false);
            long id = connectionId(physical);
            physical.commit();
            try (Connection other = ds.getConnection(); Statement st = other.createStatement()) {
                st.execute("KILL CONNECTION " + id);
            }
            Connection lent = LentConnection.of(physical);
            JdbcIdempotencyStore onIt = JdbcIdempotencyStore.builder(new MariaDbDataSource() {
                @Override
                public Connection getConnection() {
                    return lent;
                }
            }).dialect(JdbcDialect.MARIADB).table(table).build();
            IdempotencyKey key = IdempotencyKey.of("manual-commit", UUID.randomUUID().toString());

            StoreUnavailableException e = catchThrowableOfType(StoreUnavailableException.class,
                    () -> onIt.tryClaim(new ClaimRequest(key, Fingerprint.sha256(new byte[] {1}), OwnerToken.random(),
                            Duration.ofMinutes(1), Duration.ofHours(1))));
            assertThat(e.getMessage()).as("the call's failure (the driver says 'Socket error')")
                    .doesNotContain("Connection is closed");
            assertThat(e.getCause().getSuppressed()).as("the rollback's, kept with it").hasSize(1);
            assertThat(e.isUnreachable()).isTrue();
        } finally {
            try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                st.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }
}
