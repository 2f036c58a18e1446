package io.retrysafe.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestDatabases;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A console over a fresh records table in the test PostgreSQL (or MariaDB), and records seeded through the real
 * store: what the console ITs share. The table's name is unique per run; {@link #close()} drops it.
 */
final class ConsoleFixture implements AutoCloseable {
    static final Duration LONG_LEASE = Duration.ofHours(1);
    static final Duration RETENTION = Duration.ofDays(1);
    static final String TOKEN = "test-token-" + UUID.randomUUID();
    static final String CARD = "4111111111111111";

    final String table = "rs_console_it_" + UUID.randomUUID().toString().substring(0, 8);
    final JdbcDialect dialect;
    final DataSource ds;
    final JdbcIdempotencyStore store;
    final Fingerprint fp = Fingerprint.sha256("request".getBytes(StandardCharsets.UTF_8));
    final ConsoleServer console;

    /** On PostgreSQL. */
    ConsoleFixture(boolean revealKeys) throws Exception {
        this(JdbcDialect.POSTGRESQL, revealKeys);
    }

    ConsoleFixture(JdbcDialect dialect, boolean revealKeys) throws Exception {
        this.dialect = dialect;
        this.ds = isPostgres() ? TestDatabases.postgres() : TestDatabases.mariadb();
        this.store = JdbcIdempotencyStore.builder(ds).dialect(dialect).table(table).build();
        store.createSchema();
        Database db = Database.open(settings());
        console = ConsoleServer.start(db, new ConsoleConfig(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                TOKEN, revealKeys, Clock.systemUTC()));
    }

    private boolean isPostgres() {
        return dialect == JdbcDialect.POSTGRESQL;
    }

    ConnectionOptions.Settings settings() {
        return isPostgres()
                ? new ConnectionOptions.Settings(TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                        TestDatabases.postgresPassword(), table)
                : new ConnectionOptions.Settings(TestDatabases.mariadbJdbcUrl(), TestDatabases.mariadbUser(),
                        TestDatabases.mariadbPassword(), table);
    }

    /** The connection flags of the test database, for the command run in process (its password is empty). */
    List<String> connectionFlags() {
        return List.of("--url", settings().url(), "--user", settings().user(), "--table", table);
    }

    String base() {
        return "http://127.0.0.1:" + console.port();
    }

    /** An IN_PROGRESS key whose lease ran out a minute ago by the database's clock: its owner died. */
    IdempotencyKey stuck(String scope, String value) throws SQLException {
        IdempotencyKey key = IdempotencyKey.of(scope, value);
        claim(key);
        // The database's clock, as the store's: PostgreSQL's now(), MariaDB's UTC_TIMESTAMP (columns in UTC).
        String now = isPostgres() ? "now()" : "UTC_TIMESTAMP(6)";
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("UPDATE " + table
                + " SET lease_expires_at = " + now + " - INTERVAL '1' MINUTE, created_at = " + now
                + " - INTERVAL '10' MINUTE WHERE scope = ?")) {
            ps.setString(1, scope);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
        return key;
    }

    /** A COMPLETED key whose answer was stored redacted, as a redacting protection stores it. */
    IdempotencyKey completedRedacted(String scope) {
        IdempotencyKey key = IdempotencyKey.of(scope, "k-" + UUID.randomUUID());
        OwnerToken token = claim(key);
        StoredResponseProtection redacting = StoredResponseProtection.redacting(r -> StoredResponse.of(r.status(),
                r.headers(), new String(r.body(), StandardCharsets.UTF_8).replace(CARD, "****1111")
                        .getBytes(StandardCharsets.UTF_8)));
        StoredResponse answer = StoredResponse.of(201, Map.of("Content-Type", List.of("application/json")),
                ("{\"payment\":\"p-1\",\"card\":\"" + CARD + "\"}").getBytes(StandardCharsets.UTF_8));
        assertThat(store.complete(key, token, redacting.seal(key, answer), RETENTION)).isEqualTo(FencedWrite.COMMITTED);
        return key;
    }

    OwnerToken claim(IdempotencyKey key) {
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, fp, token, LONG_LEASE, RETENTION)))
                .isEqualTo(new ClaimResult.Claimed(token, 1));
        return token;
    }

    @Override
    public void close() throws SQLException {
        console.close();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS " + table);
        }
    }
}
