package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.tck.StandaloneStoreContract;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The store contract on PostgreSQL in standalone mode on a pool whose connections have auto-commit off, as
 * applications that run their own transactions configure theirs: every call is still committed before it returns,
 * and the connection goes back as it came, its auto-commit off, so that the application's next transaction on it
 * is one.
 */
class PostgresManualCommitContractIT extends StandaloneStoreContract {
    private static final String TABLE = "rs_pg_manual_commit_" + UUID.randomUUID().toString().replace("-", "")
            .substring(0, 12);
    private static final Duration LEASE = Duration.ofMinutes(5);
    private static final Duration RETENTION = Duration.ofHours(1);
    private static HikariDataSource pool;
    private static JdbcIdempotencyStore store;

    @BeforeAll
    static void createTable() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(TestDatabases.postgresJdbcUrl());
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(8);
        config.setAutoCommit(false);
        pool = new HikariDataSource(config);
        store = JdbcIdempotencyStore.builder(pool).table(TABLE).build();
        store.createSchema();
    }

    @AfterAll
    static void dropTable() throws SQLException {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS " + TABLE);
        }
        pool.close();
    }

    @Override
    protected IdempotencyStore store() {
        return store;
    }

    /**
     * On one connection a pool hands out again as it is (no reset on return, as the pool above would do): each
     * call is seen committed from another connection, and the application's transaction after it still rolls back.
     */
    @Test
    void eachCallCommitsAndTheConnectionKeepsItsAutoCommitOff() throws Exception {
        try (Connection physical = DriverManager.getConnection(TestDatabases.postgresJdbcUrl(),
                TestDatabases.postgresUser(), TestDatabases.postgresPassword())) {
            physical.setAutoCommit(false);
            DataSource same = sameConnection(physical);
            JdbcIdempotencyStore onIt = JdbcIdempotencyStore.builder(same).table(TABLE).build();
            IdempotencyKey key = IdempotencyKey.of("manual-commit", UUID.randomUUID().toString());
            OwnerToken token = OwnerToken.random();
            Fingerprint fp = Fingerprint.sha256("pay 10".getBytes(StandardCharsets.UTF_8));

            assertThat(onIt.tryClaim(new ClaimRequest(key, fp, token, LEASE, RETENTION)))
                    .isInstanceOf(ClaimResult.Claimed.class);
            assertThat(physical.getAutoCommit()).isFalse();
            assertThat(store.inspect(key)).hasValueSatisfying(r -> assertThat(r.status())
                    .isEqualTo(RecordStatus.IN_PROGRESS));

            assertThat(onIt.complete(key, token, StoredResponse.of(201, new byte[] {42}), RETENTION))
                    .isEqualTo(FencedWrite.COMMITTED);
            assertThat(physical.getAutoCommit()).isFalse();
            assertThat(store.inspect(key)).hasValueSatisfying(r -> assertThat(r.status())
                    .isEqualTo(RecordStatus.COMPLETED));

            JdbcIdempotencyStore noTable = JdbcIdempotencyStore.builder(same).dialect(JdbcDialect.POSTGRESQL)
                    .table(TABLE + "_absent").build();
            assertThatThrownBy(() -> noTable.tryClaim(new ClaimRequest(key, fp, OwnerToken.random(), LEASE,
                    RETENTION))).isInstanceOf(StoreUnavailableException.class);
            assertThat(physical.getAutoCommit()).isFalse();

            try (Statement st = physical.createStatement()) {
                st.execute("CREATE TEMP TABLE app_rows (id int)");
                physical.commit();
                st.execute("INSERT INTO app_rows VALUES (1)");
                physical.rollback();
                try (ResultSet rows = st.executeQuery("SELECT count(*) FROM app_rows")) {
                    assertThat(rows.next()).isTrue();
                    assertThat(rows.getInt(1)).as("the application's rolled-back insert").isZero();
                }
            }
        }
    }

    /**
     * A call whose connection the server ends reports that failure, not the closed connection it leaves behind
     * (putting auto-commit back on it fails too).
     */
    @Test
    void aCallOnAConnectionTheServerEndedReportsWhyNotThatItIsClosed() throws Exception {
        try (Connection physical = DriverManager.getConnection(TestDatabases.postgresJdbcUrl(),
                TestDatabases.postgresUser(), TestDatabases.postgresPassword())) {
            physical.setAutoCommit(false);
            int pid;
            try (Statement st = physical.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                assertThat(rs.next()).isTrue();
                pid = rs.getInt(1);
            }
            physical.commit(); // idle, as a connection just taken from a pool
            try (Connection other = TestDatabases.postgres().getConnection(); Statement st = other.createStatement()) {
                st.execute("SELECT pg_terminate_backend(" + pid + ")");
            }
            JdbcIdempotencyStore onIt = JdbcIdempotencyStore.builder(sameConnection(physical))
                    .dialect(JdbcDialect.POSTGRESQL).table(TABLE).build();
            IdempotencyKey key = IdempotencyKey.of("manual-commit", UUID.randomUUID().toString());

            assertThatThrownBy(() -> onIt.tryClaim(new ClaimRequest(key, Fingerprint.sha256(new byte[] {1}),
                    OwnerToken.random(), LEASE, RETENTION))).isInstanceOf(StoreUnavailableException.class)
                    // terminated by the administrator, or the socket it closed: not 08003, the closed connection
                    .hasMessageMatching("(?s).*\\(SQLState (57P01|08006)\\)")
                    .satisfies(e -> assertThat(((StoreUnavailableException) e).isUnreachable()).isTrue());
        }
    }

    /** Hands out {@code physical} on every request, as {@link LentConnection} lends it. */
    private static DataSource sameConnection(Connection physical) {
        Connection lent = LentConnection.of(physical);
        return new PGSimpleDataSource() {
            @Override
            public Connection getConnection() {
                return lent;
            }
        };
    }
}
