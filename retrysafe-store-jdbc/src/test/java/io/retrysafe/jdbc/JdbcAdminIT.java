package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcAdmin.AgeBucket;
import io.retrysafe.jdbc.JdbcAdmin.RecordSummary;
import io.retrysafe.jdbc.JdbcAdmin.Stats;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The operators' API on both databases: stuck keys are found by age and status, released into the
 * next attempt, finished records are left alone, and the counts add up. Records are aged with the
 * database's own clock instead of waiting.
 */
class JdbcAdminIT {
    private static final Duration LONG_LEASE = Duration.ofHours(1);
    private static final Duration RETENTION = Duration.ofDays(30);

    /** Unique per run: other builds may run these tests against the same databases at the same time. */
    private final String table = "rs_admin_it_" + UUID.randomUUID().toString().substring(0, 8);
    private final Fingerprint fp = Fingerprint.sha256(new byte[] {7});

    private JdbcDialect dialect;
    private DataSource ds;
    private JdbcIdempotencyStore store;
    private JdbcAdmin admin;

    private void open(JdbcDialect dialect) {
        this.dialect = dialect;
        ds = dialect == JdbcDialect.POSTGRESQL ? TestDatabases.postgres() : TestDatabases.mariadb();
        store = JdbcIdempotencyStore.builder(ds).dialect(dialect).table(table).lockTimeout(Duration.ofSeconds(2)).build();
        store.createSchema();
        admin = JdbcAdmin.of(store);
    }

    @AfterEach
    void dropTable() throws SQLException {
        if (ds != null) {
            try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                st.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }

    private OwnerToken claim(IdempotencyKey key) {
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, fp, token, LONG_LEASE, RETENTION)))
                .isEqualTo(new ClaimResult.Claimed(token, 1));
        return token;
    }

    private IdempotencyKey completed(String scope, String value) {
        IdempotencyKey key = IdempotencyKey.of(scope, value);
        assertThat(store.complete(key, claim(key), StoredResponse.of(201, new byte[] {42}), RETENTION))
                .isEqualTo(FencedWrite.COMMITTED);
        return key;
    }

    /** Moves the record's creation into the past by {@code age}, with the database's clock. */
    private void age(IdempotencyKey key, Duration age) throws SQLException {
        String shift = dialect == JdbcDialect.POSTGRESQL ? "created_at - ? * interval '1 millisecond'"
                : "created_at - INTERVAL ? MICROSECOND";
        update("UPDATE " + table + " SET created_at = " + shift + " WHERE scope = ? AND idem_key = ?",
                dialect == JdbcDialect.POSTGRESQL ? age.toMillis() : age.toMillis() * 1000, key);
    }

    private void expire(IdempotencyKey key) throws SQLException {
        String past = dialect == JdbcDialect.POSTGRESQL ? "statement_timestamp() - ? * interval '1 millisecond'"
                : "UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND";
        update("UPDATE " + table + " SET expires_at = " + past + " WHERE scope = ? AND idem_key = ?",
                dialect == JdbcDialect.POSTGRESQL ? 60_000L : 60_000_000L, key);
    }

    private void update(String sql, long amount, IdempotencyKey key) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, amount);
            ps.setString(2, key.scope());
            ps.setString(3, key.value());
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void listFindsAStuckKeyOlderThanTheBoundAndNotAFreshOne(JdbcDialect d) throws SQLException {
        open(d);
        // A scope that would break a statement built by concatenation: every value is a bind parameter.
        String scope = "tenant'; DROP TABLE " + table + "; --";
        IdempotencyKey stuck = IdempotencyKey.of(scope, "k-stuck-" + UUID.randomUUID());
        claim(stuck);
        age(stuck, Duration.ofMinutes(10));
        IdempotencyKey fresh = IdempotencyKey.of(scope, "k-fresh-" + UUID.randomUUID());
        claim(fresh);
        IdempotencyKey doneLongAgo = completed(scope, "k-done-" + UUID.randomUUID());
        age(doneLongAgo, Duration.ofMinutes(20));

        List<RecordSummary> stuckKeys = admin.list(RecordStatus.IN_PROGRESS, Duration.ofMinutes(5), 100);

        assertThat(stuckKeys).singleElement().satisfies(s -> {
            assertThat(s.scope()).isEqualTo(scope);
            assertThat(s.keyDigest()).isEqualTo(stuck.digest());
            assertThat(s.status()).isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(s.attempt()).isEqualTo(1);
            assertThat(s.leaseExpiresAt()).isAfter(s.createdAt().plus(Duration.ofMinutes(10)));
            assertThat(s.expiresAt()).isAfter(s.leaseExpiresAt());
            assertThat(s.toString()).doesNotContain(stuck.value());
        });
        assertThat(admin.list(null, Duration.ofMinutes(5), 100)).as("any status, oldest first")
                .extracting(RecordSummary::keyDigest).containsExactly(doneLongAgo.digest(), stuck.digest());
        assertThat(admin.list(RecordStatus.IN_PROGRESS, Duration.ZERO, 100)).extracting(RecordSummary::keyDigest)
                .containsExactly(stuck.digest(), fresh.digest());
        assertThat(admin.list(RecordStatus.IN_PROGRESS, Duration.ZERO, 1)).as("limited")
                .extracting(RecordSummary::keyDigest).containsExactly(stuck.digest());
        assertThat(admin.list(RecordStatus.FAILED, Duration.ZERO, 100)).isEmpty();
        expire(stuck);
        assertThat(admin.list(RecordStatus.IN_PROGRESS, Duration.ofMinutes(5), 100)).as("an expired record is absent")
                .isEmpty();
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void releaseFreesAStuckKeyAndTheNextClaimIsAttempt2(JdbcDialect d) {
        open(d);
        IdempotencyKey key = IdempotencyKey.of("tenant-1:POST /payments", "k-" + UUID.randomUUID());
        OwnerToken deadOwner = claim(key);
        assertThat(store.tryClaim(new ClaimRequest(key, fp, OwnerToken.random(), LONG_LEASE, RETENTION)))
                .as("stuck: the lease is alive for an hour").isInstanceOf(ClaimResult.InProgress.class);

        assertThat(admin.release(key.scope(), key.value())).isTrue();

        IdempotencyRecord released = admin.inspect(key.scope(), key.value()).orElseThrow();
        assertThat(released.status()).isEqualTo(RecordStatus.FAILED);
        assertThat(released.leaseExpiresAt()).as("the lease ended with the release").isBefore(Instant.now().plusSeconds(60));
        OwnerToken retry = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, fp, retry, LONG_LEASE, RETENTION)))
                .isEqualTo(new ClaimResult.Claimed(retry, 2));
        assertThat(store.complete(key, deadOwner, StoredResponse.of(200, new byte[] {1}), RETENTION))
                .as("the released holder cannot complete any more").isEqualTo(FencedWrite.LEASE_LOST);
        assertThat(admin.release(key.scope(), key.value(), 1))
                .as("an operator who looked at attempt 1 does not release attempt 2").isFalse();
        assertThat(store.inspect(key)).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(r.attempt()).isEqualTo(2);
        });
        assertThat(store.complete(key, retry, StoredResponse.of(201, new byte[] {2}), RETENTION))
                .isEqualTo(FencedWrite.COMMITTED);
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void releaseOfACompletedFailedOrAbsentKeyChangesNothing(JdbcDialect d) {
        open(d);
        IdempotencyKey done = completed("tenant-1", "k-done-" + UUID.randomUUID());
        IdempotencyRecord before = store.inspect(done).orElseThrow();

        assertThat(admin.release(done.scope(), done.value())).isFalse();

        IdempotencyRecord after = store.inspect(done).orElseThrow();
        assertThat(after.status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(after.attempt()).isEqualTo(before.attempt());
        assertThat(after.leaseExpiresAt()).isEqualTo(before.leaseExpiresAt());
        assertThat(after.response()).get().extracting(StoredResponse::status).isEqualTo(201);
        assertThat(store.tryClaim(new ClaimRequest(done, fp, OwnerToken.random(), LONG_LEASE, RETENTION)))
                .as("still replayed").isInstanceOf(ClaimResult.Replay.class);

        IdempotencyKey failed = IdempotencyKey.of("tenant-1", "k-failed-" + UUID.randomUUID());
        assertThat(store.release(failed, claim(failed))).isEqualTo(FencedWrite.COMMITTED);
        assertThat(admin.release(failed.scope(), failed.value())).isFalse();
        assertThat(admin.release("tenant-1", "k-absent-" + UUID.randomUUID())).isFalse();
        assertThat(admin.inspect("tenant-1", "k-absent")).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void statsCountLiveRecordsByStatusAndAgeAndExpiredOnesApart(JdbcDialect d) throws SQLException {
        open(d);
        claim(IdempotencyKey.of("s", "in-progress-fresh"));
        completed("s", "completed-fresh");
        age(completed("s", "completed-2h"), Duration.ofHours(2));
        IdempotencyKey failed = IdempotencyKey.of("s", "failed-2d");
        store.release(failed, claim(failed));
        age(failed, Duration.ofDays(2));
        age(completed("s", "completed-8d"), Duration.ofDays(8));
        expire(completed("s", "expired"));
        expire(completed("s", "expired-too"));

        Stats stats = admin.stats();

        assertThat(stats.byStatus()).containsExactlyInAnyOrderEntriesOf(java.util.Map.of(
                RecordStatus.IN_PROGRESS, 1L, RecordStatus.COMPLETED, 3L, RecordStatus.FAILED, 1L));
        assertThat(stats.byAge()).containsExactlyInAnyOrderEntriesOf(java.util.Map.of(
                AgeBucket.UNDER_1H, 2L, AgeBucket.UNDER_24H, 1L, AgeBucket.UNDER_7D, 1L, AgeBucket.OLDER, 1L));
        assertThat(stats.live()).isEqualTo(5);
        assertThat(stats.expired()).isEqualTo(2);
        assertThat(admin.countExpired()).isEqualTo(2);
        assertThat(stats.tableBytes()).isPositive();

        assertThat(store.purger().build().purge().deleted()).as("what the counts said a purge would delete")
                .isEqualTo(2);
        assertThat(admin.stats().expired()).isZero();
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void badArgumentsAreRefusedAndAMissingTableIsAStoreFailure(JdbcDialect d) {
        open(d);
        assertThatThrownBy(() -> admin.list(null, Duration.ZERO, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("limit must be between 1 and 10000, but was 0");
        assertThatThrownBy(() -> admin.list(null, Duration.ofSeconds(-1), 10)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("olderThan must not be negative, but was PT-1S");
        assertThatThrownBy(() -> admin.release("s", "")).isInstanceOf(io.retrysafe.InvalidKeyException.class);

        JdbcAdmin missing = JdbcAdmin.of(JdbcIdempotencyStore.builder(ds).dialect(d).table(table + "_missing").build());
        assertThatThrownBy(missing::stats).isInstanceOf(StoreUnavailableException.class)
                .hasMessageContaining(table + "_missing");
    }
}
