package io.retrysafe.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.InProgress;
import io.retrysafe.spi.ClaimResult.Replay;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * What is particular to DynamoDB: the store's own clock and the skew it tolerates between instances,
 * expired items that are still in the table, responses over one item, and failures. Runs on the test
 * server ({@code RETRYSAFE_DYNAMODB_URL}, or a private dynalite) in a table of its own.
 */
class DynamoDbStoreIT {
    @RegisterExtension
    static final DynamoTable table = new DynamoTable();

    private static final Duration LONG = Duration.ofMinutes(5);
    private static final Duration AWAIT = Duration.ofSeconds(20);

    private final String scope = "it-" + UUID.randomUUID();
    private final Fingerprint fingerprint = Fingerprint.sha256("POST /orders {}".getBytes(UTF_8));

    // ------------------------------------------------------------------------------------------
    // Clocks
    // ------------------------------------------------------------------------------------------

    @Test
    void aClockAheadByLessThanTheMarginCannotTakeOverALiveLease() {
        IdempotencyKey key = newKey();
        Claimed holder = claimed(table.store(b -> b), key, Duration.ofSeconds(3));
        DynamoDbIdempotencyStore ahead = table.storeWithClock(Duration.ofMillis(2_500), Duration.ofSeconds(3));

        ClaimResult result = ahead.tryClaim(request(key, LONG));

        assertThat(result).as("claim by an instance whose clock is 2.5 s ahead, margin 3 s, of a 3 s lease just made")
                .isInstanceOf(InProgress.class);
        assertThat(table.store.complete(key, holder.token(), response("holder"), LONG))
                .as("the holder's completion").isEqualTo(FencedWrite.COMMITTED);
    }

    /** Why the margin exists: with none, a clock ahead sees a live lease as over and runs the work twice. */
    @Test
    void withoutAMarginAClockAheadTakesOverALiveLease() {
        IdempotencyKey key = newKey();
        Claimed holder = claimed(table.store(b -> b), key, Duration.ofSeconds(3));
        DynamoDbIdempotencyStore ahead = table.storeWithClock(Duration.ofSeconds(5), Duration.ZERO);

        ClaimResult result = ahead.tryClaim(request(key, LONG));

        assertThat(result).as("claim by an instance whose clock is 5 s ahead, no margin, of a 3 s lease just made")
                .isInstanceOf(Claimed.class);
        assertThat(table.store.complete(key, holder.token(), response("holder"), LONG))
                .as("the first holder, fenced off by the takeover").isEqualTo(FencedWrite.LEASE_LOST);
    }

    @Test
    void aClockAheadWithinTheMarginTakesOverOnlyAfterTheLeaseEndedOnTheHoldersClock() {
        IdempotencyKey key = newKey();
        DynamoDbIdempotencyStore holderStore = table.store(b -> b);
        Duration lease = Duration.ofMillis(1_500);
        claimed(holderStore, key, lease);
        long leaseEnd = holderStore.inspect(key).orElseThrow().leaseExpiresAt().toEpochMilli();
        DynamoDbIdempotencyStore ahead = table.storeWithClock(Duration.ofMillis(900), Duration.ofSeconds(1));
        AtomicLong answeredAt = new AtomicLong();

        ClaimResult result = await("a takeover by the instance whose clock is ahead").atMost(AWAIT)
                .pollInterval(Duration.ofMillis(20)).until(() -> {
                    ClaimResult r = ahead.tryClaim(request(key, LONG));
                    answeredAt.set(System.currentTimeMillis());
                    return r;
                }, r -> !(r instanceof InProgress));

        assertThat(result).isInstanceOf(Claimed.class);
        assertThat(answeredAt.get()).as("when the takeover answered, against the lease's end on the holder's clock")
                .isGreaterThanOrEqualTo(leaseEnd);
    }

    @Test
    void leaseNoLongerThanTheMarginIsRefused() {
        IdempotencyKey key = newKey();

        IllegalArgumentException e = catchThrowableOfType(IllegalArgumentException.class,
                () -> table.store(b -> b).tryClaim(request(key, Duration.ofSeconds(1))));

        assertThat(e).as("claim with a lease of 1 s under the default margin of 1 s").isNotNull();
        assertThat(e.getMessage()).contains("leaseTtl must be longer than maxClockSkew (PT1S)").contains("but was PT1S");
        assertThat(table.store.inspect(key)).as("nothing written").isEmpty();
    }

    // ------------------------------------------------------------------------------------------
    // Expiry: DynamoDB's TTL deletes late, dynalite never
    // ------------------------------------------------------------------------------------------

    @Test
    void anExpiredItemStillInTheTableIsAbsentAndReplacedByTheNextClaim() {
        IdempotencyKey key = newKey();
        Claimed first = claimed(table.store, key, Duration.ofSeconds(30));
        assertThat(table.store.complete(key, first.token(), response("old"), Duration.ofMillis(500)))
                .isEqualTo(FencedWrite.COMMITTED);
        long ttl = Long.parseLong(rawItem(key).get("ttl").n());

        await("the record's expiry").atMost(AWAIT).pollInterval(Duration.ofMillis(20))
                .until(() -> table.store.inspect(key).isEmpty());

        assertThat(rawItem(key)).as("the expired item, still in the table").isNotNull()
                .containsEntry("status", AttributeValue.fromS("COMPLETED"));
        assertThat(ttl * 1000).as("TTL (epoch s) against the expiry (epoch ms) plus the margin")
                .isGreaterThanOrEqualTo(Long.parseLong(rawItem(key).get("expires").n()) + DynamoTable.TEST_SKEW.toMillis());
        Fingerprint other = Fingerprint.sha256("POST /orders {\"other\":1}".getBytes(UTF_8));
        ClaimResult again = table.store.tryClaim(new ClaimRequest(key, other, OwnerToken.random(), Duration.ofSeconds(30),
                LONG));
        assertThat(again).as("claim with another fingerprint of the expired key").isInstanceOf(Claimed.class);
        assertThat(((Claimed) again).attempt()).isEqualTo(1);
        assertThat(rawItem(key)).as("the item the claim wrote over the expired one")
                .containsEntry("status", AttributeValue.fromS("IN_PROGRESS"))
                .containsEntry("fingerprint", AttributeValue.fromS(other.hex()))
                .doesNotContainKey("rbody");
    }

    // ------------------------------------------------------------------------------------------
    // Size
    // ------------------------------------------------------------------------------------------

    @Test
    void aResponseOverMaxResponseSizeIsRefusedAndTheHolderKeepsTheKey() {
        DynamoDbIdempotencyStore small = table.store(b -> b.maxClockSkew(DynamoTable.TEST_SKEW).maxResponseSize(1000));
        IdempotencyKey key = newKey();
        Claimed holder = claimed(small, key, Duration.ofSeconds(30));

        StoreUnavailableException e = catchThrowableOfType(StoreUnavailableException.class,
                () -> small.complete(key, holder.token(), StoredResponse.of(200, Map.of(), new byte[1001]), LONG));

        assertThat(e).as("completion with a 1001-byte body, maxResponseSize 1000").isNotNull();
        assertThat(e.isUnreachable()).as("a refusal, not an unreachable store").isFalse();
        assertThat(e.getMessage()).contains("refused to complete key " + key.digest())
                .contains("the response is 1001 bytes (headers 0, body 1001), over maxResponseSize 1000")
                .contains("table " + table.tableName);
        assertThat(small.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);
        assertThat(small.complete(key, holder.token(), response("fits"), LONG)).isEqualTo(FencedWrite.COMMITTED);
    }

    @Test
    void headersThatDoNotFitOneItemAreRefused() {
        IdempotencyKey key = newKey();
        Claimed holder = claimed(table.store, key, Duration.ofSeconds(30));
        StoredResponse huge = StoredResponse.of(200, Map.of("X-Big", List.of("x".repeat(410_000))), new byte[0]);

        StoreUnavailableException e = catchThrowableOfType(StoreUnavailableException.class,
                () -> table.store.complete(key, holder.token(), huge, LONG));

        assertThat(e).isNotNull();
        assertThat(e.getMessage()).contains("headers are 410007 bytes")
                .contains("do not fit in one DynamoDB item (409600 bytes)");
        assertThat(table.store.complete(key, holder.token(), response("fits"), LONG)).isEqualTo(FencedWrite.COMMITTED);
    }

    @Test
    void aBodyOverOneItemIsStoredInBodyItemsAndARefusedCompletionLeavesNoneBehind() {
        IdempotencyKey key = newKey();
        byte[] body = new byte[900_000];
        new Random(7).nextBytes(body);
        Claimed old = claimed(table.store, key, Duration.ofMillis(300));
        ClaimResult takeover = await("a takeover").atMost(AWAIT).pollInterval(Duration.ofMillis(20))
                .until(() -> table.store.tryClaim(request(key, Duration.ofSeconds(30))), r -> !(r instanceof InProgress));
        assertThat(takeover).isInstanceOf(Claimed.class);
        Claimed current = (Claimed) takeover;

        assertThat(table.store.complete(key, old.token(), StoredResponse.of(200, Map.of(), body), LONG))
                .as("a 900 kB completion by the holder taken over").isEqualTo(FencedWrite.LEASE_LOST);
        assertThat(bodyItems(key)).as("body items left by the refused completion").isZero();

        assertThat(table.store.complete(key, current.token(), StoredResponse.of(201, Map.of(), body), LONG))
                .isEqualTo(FencedWrite.COMMITTED);
        assertThat(bodyItems(key)).as("body items of a 900 kB body (about 400 kB each)").isEqualTo(3);
        ClaimResult replay = table.store.tryClaim(request(key, Duration.ofSeconds(30)));
        assertThat(replay).isInstanceOf(Replay.class);
        assertThat(((Replay) replay).response().body()).isEqualTo(body);
        assertThat(rawItem(key)).as("the record names its body items instead of holding the body")
                .doesNotContainKey("rbody").containsEntry("rbodyparts", AttributeValue.fromN("3"));
    }

    // ------------------------------------------------------------------------------------------
    // Failures
    // ------------------------------------------------------------------------------------------

    @Test
    void aServerThatDoesNotAnswerIsUnreachable() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            port = socket.getLocalPort();
        }
        try (DynamoDbClient dead = DynamoTable.client("http://127.0.0.1:" + port)) {
            DynamoDbIdempotencyStore store = DynamoDbIdempotencyStore.builder(dead).tableName("nowhere").build();

            StoreUnavailableException e = catchThrowableOfType(StoreUnavailableException.class,
                    () -> store.tryClaim(request(newKey(), Duration.ofSeconds(30))));

            assertThat(e).isNotNull();
            assertThat(e.isUnreachable()).isTrue();
            assertThat(e.storeName()).isEqualTo("dynamodb");
            assertThat(e.getMessage()).startsWith("idempotency store dynamodb failed to claim (DynamoDB table nowhere): ");
        }
    }

    @Test
    void aMissingTableIsARefusalNotAnOutage() {
        DynamoDbIdempotencyStore store = DynamoDbIdempotencyStore.builder(table.client)
                .tableName("missing-" + UUID.randomUUID()).name("orders").build();

        StoreUnavailableException e = catchThrowableOfType(StoreUnavailableException.class,
                () -> store.tryClaim(request(newKey(), Duration.ofSeconds(30))));

        assertThat(e).isNotNull();
        assertThat(e.isUnreachable()).as("a store that answered: fail-open must not run through it").isFalse();
        assertThat(e.getMessage()).startsWith("idempotency store orders failed to claim (DynamoDB table missing-");
    }

    @Test
    void createTableIfAbsentLeavesAnExistingTableAndItsRecords() {
        IdempotencyKey key = newKey();
        Claimed holder = claimed(table.store, key, Duration.ofSeconds(30));
        table.store.complete(key, holder.token(), response("kept"), LONG);

        table.store.createTableIfAbsent();

        IdempotencyRecord record = table.store.inspect(key).orElseThrow();
        assertThat(record.status()).isEqualTo(RecordStatus.COMPLETED);
    }

    // ------------------------------------------------------------------------------------------
    // Helpers
    // ------------------------------------------------------------------------------------------

    private IdempotencyKey newKey() {
        return IdempotencyKey.of(scope, "key-" + UUID.randomUUID());
    }

    private ClaimRequest request(IdempotencyKey key, Duration lease) {
        return new ClaimRequest(key, fingerprint, OwnerToken.random(), lease, LONG);
    }

    private Claimed claimed(DynamoDbIdempotencyStore store, IdempotencyKey key, Duration lease) {
        ClaimResult result = store.tryClaim(request(key, lease));
        assertThat(result).as("first claim of %s", key).isInstanceOf(Claimed.class);
        return (Claimed) result;
    }

    private static StoredResponse response(String body) {
        return StoredResponse.of(200, Map.of("Content-Type", List.of("text/plain")), body.getBytes(UTF_8));
    }

    private static Map<String, AttributeValue> rawItem(IdempotencyKey key) {
        Map<String, AttributeValue> item = table.client.getItem(r -> r.tableName(table.tableName)
                .key(Map.of("id", AttributeValue.fromS(key.hash()))).consistentRead(true)).item();
        return item == null || item.isEmpty() ? null : item;
    }

    /** The body items of {@code key}'s record in the table, of any completion. */
    private static long bodyItems(IdempotencyKey key) {
        return table.client.scanPaginator(r -> r.tableName(table.tableName).consistentRead(true)
                .filterExpression("begins_with(#id, :prefix)").expressionAttributeNames(Map.of("#id", "id"))
                .expressionAttributeValues(Map.of(":prefix", AttributeValue.fromS(key.hash() + "#body#")))
                .projectionExpression("#id")).items().stream().count();
    }
}
