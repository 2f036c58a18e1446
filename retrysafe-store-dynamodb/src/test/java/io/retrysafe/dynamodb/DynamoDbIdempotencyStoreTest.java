package io.retrysafe.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/** The builder: defaults, checked arguments, values set once. Nothing here sends a request. */
class DynamoDbIdempotencyStoreTest {
    /** A real client; building it opens no connection, and no test here makes a call. */
    private static final DynamoDbClient CLIENT = DynamoTable.client("http://127.0.0.1:9");

    @AfterAll
    static void close() {
        CLIENT.close();
    }

    @Test
    void defaults() {
        DynamoDbIdempotencyStore store = DynamoDbIdempotencyStore.builder(CLIENT).build();

        assertThat(store.tableName()).isEqualTo("retrysafe_idempotency");
        assertThat(store.name()).isEqualTo("dynamodb");
        assertThat(store.maxClockSkew()).isEqualTo(Duration.ofSeconds(1));
        assertThat(store.maxResponseSize()).isEqualTo(4 * 1024 * 1024);
        assertThat(store.canRenewLease()).isTrue();
        assertThat(store.isStandalone()).isTrue();
        assertThat(store.purgeExpired(100)).as("TTL deletes; nothing to purge").isZero();
        assertThat(store).hasToString("DynamoDbIdempotencyStore[name=dynamodb, table=retrysafe_idempotency, "
                + "maxClockSkew=PT1S, maxResponseSize=4194304]");
    }

    @Test
    void tableNameIsWhatDynamoDbAccepts() {
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).tableName("ab"))
                .hasMessage("tableName must be 3 to 255 letters, digits, '_', '-' or '.', but was \"ab\"");
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).tableName("orders/keys"))
                .hasMessage("tableName must be 3 to 255 letters, digits, '_', '-' or '.', but was \"orders/keys\"");
        assertThat(DynamoDbIdempotencyStore.builder(CLIENT).tableName("orders.idempotency-v2_x").build().tableName())
                .isEqualTo("orders.idempotency-v2_x");
    }

    @Test
    void maxClockSkewIsWholeMillisecondsAndNotNegative() {
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).maxClockSkew(Duration.ofMillis(-1)))
                .hasMessage("maxClockSkew must not be negative, but was PT-0.001S");
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).maxClockSkew(Duration.ofNanos(1_500_000)))
                .hasMessage("maxClockSkew must be whole milliseconds, but was PT0.0015S");
        assertThat(DynamoDbIdempotencyStore.builder(CLIENT).maxClockSkew(Duration.ZERO).build().maxClockSkew())
                .isZero();
    }

    @Test
    void maxResponseSizeIsNotNegative() {
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).maxResponseSize(-1))
                .hasMessage("maxResponseSize must be between 0 and 2147483639, but was -1");
    }

    @Test
    void eachValueIsSetOnce() {
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).tableName("one").tableName("two"))
                .isInstanceOf(IllegalStateException.class).hasMessage("tableName was already set to one");
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).maxClockSkew(Duration.ZERO)
                .maxClockSkew(Duration.ofSeconds(2))).hasMessage("maxClockSkew was already set to PT0S");
        assertThatThrownBy(() -> DynamoDbIdempotencyStore.builder(CLIENT).name("a").name("b"))
                .hasMessage("name was already set to a");
    }
}
