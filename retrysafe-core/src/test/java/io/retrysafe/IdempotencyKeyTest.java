package io.retrysafe;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * A key's hash names its record in the Redis and DynamoDB stores: it must not change from one release to the
 * next, or the records written before an upgrade would no longer be found.
 */
class IdempotencyKeyTest {

    @Test
    void theHashIsSha256OverUtf8ScopeAZeroByteAndTheKeyInLowerCaseHex() {
        // Expected values from a separate implementation: printf 'user-42:payments\0order-7' | sha256sum
        assertThat(IdempotencyKey.of("user-42:payments", "order-7").hash())
                .isEqualTo("ee8ac24e14f713c9aeb6453b4c2e30eccf995fdf6e08ede657dae5b8a43c51e6");
        assertThat(IdempotencyKey.of("é", "k").hash())
                .isEqualTo("53acd0d067c7b8de23b7976c8838265530ec26af6b86aac302a59e421549b6c0");
    }

    @Test
    void theDigestIsTheHashsFirstTwelveDigits() {
        assertThat(IdempotencyKey.of("user-42:payments", "order-7").digest()).isEqualTo("ee8ac24e14f7");
    }

    @Test
    void theHashIsMadeOnceHoweverOftenTheLogsAndTheStoreAskForIt() {
        IdempotencyKey key = IdempotencyKey.of("user-42:payments", "order-7");

        String first = key.hash();
        key.digest();

        assertThat(key.hash()).isSameAs(first);
    }
}
