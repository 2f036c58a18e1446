package io.retrysafe.r2dbc;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcAdmin;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.PurgeResult;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestDatabases;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * One table, two stores: what the R2DBC store writes, the JDBC store replays and the operator's
 * tools (the CLI's {@link JdbcAdmin}, {@code JdbcPurger}) list and purge, and the other way round.
 * The table is created by the JDBC store's {@code createSchema()}, from the same schema file.
 */
class SharedTableIT {
    static final String TABLE = "rs_r2dbc_shared_it";
    private static final Duration LONG = Duration.ofHours(1);
    private static final Fingerprint REQUEST = Fingerprint.sha256("PUT /orders/7".getBytes(UTF_8));
    private static final StoredResponse RESPONSE = StoredResponse.of(201,
            Map.of("Content-Type", List.of("application/json")), "{\"order\":7}".getBytes(UTF_8));

    private static JdbcIdempotencyStore jdbc;
    private static R2dbcIdempotencyStore r2dbc;

    private final String scope = "shared-" + UUID.randomUUID();

    @BeforeAll
    static void createTableWithTheJdbcStore() {
        jdbc = JdbcIdempotencyStore.builder(TestDatabases.postgres()).dialect(JdbcDialect.POSTGRESQL).table(TABLE)
                .build();
        jdbc.createSchema();
        r2dbc = R2dbcIdempotencyStore.builder(R2dbcDatabase.pool()).table(TABLE).build();
    }

    private static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(30, TimeUnit.SECONDS);
    }

    private static ClaimRequest request(IdempotencyKey key, Duration retention) {
        return new ClaimRequest(key, REQUEST, OwnerToken.random(), LONG, retention);
    }

    @Test
    void whatTheR2dbcStoreCompletesTheJdbcStoreReplaysAndTheCliLists() throws Exception {
        IdempotencyKey key = IdempotencyKey.of(scope, "order-7");
        ClaimResult.Claimed claimed = (ClaimResult.Claimed) get(r2dbc.tryClaim(request(key, LONG)));
        get(r2dbc.complete(key, claimed.token(), RESPONSE, LONG));

        ClaimResult replay = jdbc.tryClaim(request(key, LONG));

        assertThat(replay).isInstanceOf(ClaimResult.Replay.class);
        StoredResponse replayed = ((ClaimResult.Replay) replay).response();
        assertThat(replayed.status()).isEqualTo(201);
        assertThat(replayed.headers()).isEqualTo(RESPONSE.headers());
        assertThat(replayed.body()).isEqualTo(RESPONSE.body());
        assertThat(JdbcAdmin.of(jdbc).list(RecordStatus.COMPLETED, Duration.ZERO, JdbcAdmin.MAX_LIMIT))
                .filteredOn(r -> r.scope().equals(scope)).singleElement()
                .satisfies(r -> assertThat(r.keyDigest()).isEqualTo(key.digest()));
    }

    @Test
    void whatTheJdbcStoreHoldsTheR2dbcStoreRefusesAndReplaysAlike() throws Exception {
        IdempotencyKey key = IdempotencyKey.of(scope, "order-8");
        ClaimResult.Claimed claimed = (ClaimResult.Claimed) jdbc.tryClaim(request(key, LONG));

        assertThat(get(r2dbc.tryClaim(request(key, LONG)))).as("a duplicate while the JDBC store's attempt runs")
                .isInstanceOf(ClaimResult.InProgress.class);
        jdbc.complete(key, claimed.token(), RESPONSE, LONG);
        ClaimResult replay = get(r2dbc.tryClaim(request(key, LONG)));
        ClaimResult other = get(r2dbc.tryClaim(new ClaimRequest(key, Fingerprint.sha256("PUT /orders/8".getBytes(UTF_8)),
                OwnerToken.random(), LONG, LONG)));

        assertThat(replay).isInstanceOf(ClaimResult.Replay.class);
        assertThat(((ClaimResult.Replay) replay).response().body()).isEqualTo(RESPONSE.body());
        assertThat(other).isInstanceOf(ClaimResult.FingerprintMismatch.class);
        assertThat(get(r2dbc.inspect(key))).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.attempt()).isEqualTo(1);
        });
    }

    @Test
    void recordsTheR2dbcStoreWroteAreDeletedByTheJdbcPurgeOnceExpired() throws Exception {
        IdempotencyKey shortLived = IdempotencyKey.of(scope, "short");
        IdempotencyKey kept = IdempotencyKey.of(scope, "kept");
        ClaimResult.Claimed a = (ClaimResult.Claimed) get(r2dbc.tryClaim(request(shortLived, Duration.ofMillis(300))));
        get(r2dbc.complete(shortLived, a.token(), RESPONSE, Duration.ofMillis(300)));
        ClaimResult.Claimed b = (ClaimResult.Claimed) get(r2dbc.tryClaim(request(kept, LONG)));
        get(r2dbc.complete(kept, b.token(), RESPONSE, LONG));
        await().atMost(Duration.ofSeconds(10)).until(() -> get(r2dbc.inspect(shortLived)).isEmpty());

        PurgeResult purged = await().atMost(Duration.ofSeconds(30)).until(() -> jdbc.purger().build().purge(),
                PurgeResult::ran);

        assertThat(purged.deleted()).as("expired records purged (other tests' included)").isPositive();
        assertThat(JdbcAdmin.of(jdbc).countExpired()).as("expired records left").isZero();
        assertThat(get(r2dbc.inspect(kept))).as("a live record").isPresent();
        ClaimRequest again = request(shortLived, LONG);
        assertThat(get(r2dbc.tryClaim(again))).as("the purged key, claimed again")
                .isEqualTo(new ClaimResult.Claimed(again.token(), 1));
    }
}
