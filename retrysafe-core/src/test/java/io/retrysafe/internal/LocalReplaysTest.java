package io.retrysafe.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.KeyRules;
import io.retrysafe.StoredResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The local tier's bounds: its bytes, the least recently used dropped first, and each entry's expiry. */
class LocalReplaysTest {
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request".getBytes(StandardCharsets.UTF_8));
    private static final Duration HOUR = Duration.ofHours(1);

    private static IdempotencyKey key(int i) {
        return KeyRules.DEFAULT.key("scope", "key-" + i);
    }

    private static StoredResponse response(int bodyBytes) {
        return StoredResponse.of(201, Map.of("Location", List.of("/payments/1")), new byte[bodyBytes]);
    }

    @Test
    void theLeastRecentlyUsedGoFirstAndTheBytesStayWithinTheBound() {
        LocalReplays local = new LocalReplays(10_000, HOUR);
        for (int i = 0; i < 3; i++) {
            local.put(key(i), FINGERPRINT, response(3_000), HOUR, 0);
        }
        assertThat(local.get(key(0), 1)).as("used: now the most recent").isNotNull();

        local.put(key(3), FINGERPRINT, response(3_000), HOUR, 1);

        assertThat(local.bytes()).isLessThanOrEqualTo(10_000);
        assertThat(local.get(key(1), 2)).as("the least recently used").isNull();
        assertThat(local.get(key(0), 2)).isNotNull();
        assertThat(local.get(key(2), 2)).isNotNull();
        assertThat(local.get(key(3), 2)).isNotNull();
    }

    @Test
    void aResponseLargerThanTheWholeBoundIsNotKeptAndEvictsNothing() {
        LocalReplays local = new LocalReplays(10_000, HOUR);
        local.put(key(0), FINGERPRINT, response(100), HOUR, 0);
        long bytes = local.bytes();

        local.put(key(1), FINGERPRINT, response(20_000), HOUR, 0);

        assertThat(local.get(key(1), 1)).isNull();
        assertThat(local.get(key(0), 1)).isNotNull();
        assertThat(local.bytes()).isEqualTo(bytes);
    }

    @Test
    void anEntryLivesForTheShorterOfItsTtlAndTheTiersAndIsDroppedOnceExpired() {
        LocalReplays local = new LocalReplays(10_000, Duration.ofNanos(1_000));
        local.put(key(0), FINGERPRINT, response(10), HOUR, 0);
        local.put(key(1), FINGERPRINT, response(10), Duration.ofNanos(500), 0);

        assertThat(local.get(key(1), 499)).isNotNull();
        assertThat(local.get(key(1), 500)).as("its own TTL, shorter than the tier's").isNull();
        assertThat(local.get(key(0), 999)).isNotNull();
        assertThat(local.get(key(0), 1_000)).as("the tier's TTL").isNull();
        assertThat(local.bytes()).as("expired entries give their bytes back").isZero();
    }

    @Test
    void aKeyKeptAgainReplacesItsEntryAndItsBytes() {
        LocalReplays local = new LocalReplays(10_000, HOUR);
        local.put(key(0), FINGERPRINT, response(1_000), HOUR, 0);
        long one = local.bytes();

        local.put(key(0), FINGERPRINT, response(1_000), HOUR, 5);

        assertThat(local.bytes()).isEqualTo(one);
        assertThat(local.get(key(0), HOUR.toNanos() + 4)).as("kept from its second put").isNotNull();
    }
}
