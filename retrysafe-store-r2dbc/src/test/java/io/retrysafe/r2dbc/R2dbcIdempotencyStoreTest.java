package io.retrysafe.r2dbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import java.time.Duration;
import org.junit.jupiter.api.Test;

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
