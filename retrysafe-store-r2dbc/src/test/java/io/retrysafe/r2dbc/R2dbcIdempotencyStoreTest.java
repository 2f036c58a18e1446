package io.retrysafe.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** What the store and the transactional mode accept before they reach a database (nothing here connects). */
class R2dbcIdempotencyStoreTest {
    private final PostgresqlConnectionFactory connections = new PostgresqlConnectionFactory(
            PostgresqlConnectionConfiguration.builder().host("127.0.0.1").username("nobody").build());

    @Test
    void defaultsAreTheJdbcStoresTableAndLockTimeout() {
        R2dbcIdempotencyStore store = R2dbcIdempotencyStore.builder(connections).build();

        assertThat(store.table()).isEqualTo(JdbcIdempotencyStore.DEFAULT_TABLE);
        assertThat(store.lockTimeout()).isEqualTo(JdbcIdempotencyStore.DEFAULT_LOCK_TIMEOUT);
        assertThat(store.name()).isEqualTo("r2dbc:" + JdbcIdempotencyStore.DEFAULT_TABLE);
    }

    @Test
    void aTableNameThatIsNotAPlainIdentifierIsRefused() {
        assertThatThrownBy(() -> R2dbcIdempotencyStore.builder(connections).table("records; DROP TABLE users"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("table must be an unquoted SQL identifier, optionally schema-qualified (letters, digits, "
                        + "underscores; at most 63 each), but was \"records; DROP TABLE users\"");
        assertThat(R2dbcIdempotencyStore.builder(connections).table("billing.idempotency").build().table())
                .isEqualTo("billing.idempotency");
    }

    @Test
    void aLockTimeoutUnderOneMillisecondOrAValueSetTwiceIsRefused() {
        assertThatThrownBy(() -> R2dbcIdempotencyStore.builder(connections).lockTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> R2dbcIdempotencyStore.builder(connections).table("a").table("b"))
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void bothStoresOnTheTableRefuseTheSameSettingsWithTheSameMessage() {
        JdbcIdempotencyStore.Builder jdbc = JdbcIdempotencyStore.builder(new PGSimpleDataSource());
        R2dbcIdempotencyStore.Builder r2dbc = R2dbcIdempotencyStore.builder(connections);
        Map<String, Consumer<Object>> refused = new LinkedHashMap<>();
        for (String table : new String[] {"records; DROP TABLE users", "1records", "a.b.c", "\"Records\"", "x".repeat(64)}) {
            refused.put("table " + table, b -> table(b, table));
        }
        refused.put("null table", b -> table(b, null));
        for (Duration timeout : new Duration[] {Duration.ZERO, Duration.ofNanos(999_999), Duration.ofSeconds(-1)}) {
            refused.put("lockTimeout " + timeout, b -> lockTimeout(b, timeout));
        }
        refused.put("blank name", b -> name(b, " "));

        refused.forEach((what, setting) -> assertThat(failure(() -> setting.accept(r2dbc))).as(what).isNotNull()
                .isEqualTo(failure(() -> setting.accept(jdbc))));
    }

    private static void table(Object builder, String table) {
        if (builder instanceof JdbcIdempotencyStore.Builder b) {
            b.table(table);
        } else {
            ((R2dbcIdempotencyStore.Builder) builder).table(table);
        }
    }

    private static void lockTimeout(Object builder, Duration lockTimeout) {
        if (builder instanceof JdbcIdempotencyStore.Builder b) {
            b.lockTimeout(lockTimeout);
        } else {
            ((R2dbcIdempotencyStore.Builder) builder).lockTimeout(lockTimeout);
        }
    }

    private static void name(Object builder, String name) {
        if (builder instanceof JdbcIdempotencyStore.Builder b) {
            b.name(name);
        } else {
            ((R2dbcIdempotencyStore.Builder) builder).name(name);
        }
    }

    /** The class and message of what {@code setting} threw; null if it threw nothing. */
    private static String failure(Runnable setting) {
        try {
            setting.run();
            return null;
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    @Test
    void transactionalModeNeedsAnR2dbcStoreAndCannotFailOpen() {
        assertThatThrownBy(() -> TransactionalR2dbcRetrySafe.of(
                AsyncRetrySafe.builder(new InMemoryIdempotencyStore().async()).build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("transactional mode needs an engine on an R2dbcIdempotencyStore, but its store was memory");
        assertThatThrownBy(() -> TransactionalR2dbcRetrySafe.of(
                AsyncRetrySafe.builder(R2dbcIdempotencyStore.builder(connections).build()).failOpen(true).build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("transactional mode cannot fail open");
    }
}
