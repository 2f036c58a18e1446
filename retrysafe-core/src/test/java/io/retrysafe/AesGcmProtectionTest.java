package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AesGcmProtectionTest {
    private static final byte[] OLD = bytes(32, 1);
    private static final byte[] NEW = bytes(16, 2);
    private static final IdempotencyKey KEY = IdempotencyKey.of("user-42|POST /payments", "key-0001");
    private static final StoredResponse RESPONSE = StoredResponse.of(201,
            Map.of("Content-Type", List.of("application/json"), "Location", List.of("/payments/77")),
            "{\"card\":\"4111111111111111\"}".getBytes(UTF_8));

    private static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) (seed * 31 + i);
        }
        return b;
    }

    private static AesGcmProtection only(String id, byte[] key) {
        return AesGcmProtection.builder().key(id, key).currentKey(id).build();
    }

    @Test
    void aSealedAnswerNamesItsKeyIdWithoutBeingOpened() {
        assertThat(AesGcmProtection.sealedKeyId(only("2026-11", NEW).seal(KEY, RESPONSE))).hasValue("2026-11");
        assertThat(AesGcmProtection.sealedKeyId(RESPONSE)).as("not sealed").isEmpty();
        assertThat(AesGcmProtection.sealedKeyId(StoredResponse.of(200, "RSG1".getBytes(UTF_8)))).as("too short").isEmpty();
        assertThat(AesGcmProtection.sealedKeyId(StoredResponse.of(200, new byte[] {'R', 'S', 'G', '1', 9, 'a'})))
                .as("a key id longer than the body").isEmpty();
    }

    @Test
    void sealedHoldsNeitherHeadersNorBodyAndOpensToTheOriginal() {
        AesGcmProtection protection = only("k1", OLD);

        StoredResponse sealed = protection.seal(KEY, RESPONSE);

        assertThat(sealed.status()).isEqualTo(201);
        assertThat(sealed.headers()).isEmpty();
        String stored = new String(sealed.body(), UTF_8);
        assertThat(stored).doesNotContain("4111", "application/json", "/payments/77", KEY.value());
        assertThat(protection.open(KEY, sealed)).isEqualTo(RESPONSE);
        assertThat(protection.seal(KEY, RESPONSE).body()).as("a fresh nonce per seal").isNotEqualTo(sealed.body());
    }

    @Test
    void recordsSealedUnderAnEarlierKeyOpenAfterRotationWhileThatKeyIsConfigured() {
        StoredResponse beforeRotation = only("2026-10", OLD).seal(KEY, RESPONSE);
        AesGcmProtection rotated = AesGcmProtection.builder().key("2026-10", OLD).key("2026-11", NEW)
                .currentKey("2026-11").build();

        assertThat(rotated.open(KEY, beforeRotation)).isEqualTo(RESPONSE);
        StoredResponse afterRotation = rotated.seal(KEY, RESPONSE);
        assertThat(only("2026-11", NEW).open(KEY, afterRotation)).as("sealed under the current key").isEqualTo(RESPONSE);
        assertThatThrownBy(() -> only("2026-10", OLD).open(KEY, afterRotation))
                .isInstanceOf(StoredResponseUnreadableException.class)
                .hasMessageContaining("key id \"2026-11\", which is not configured");
    }

    @Test
    void aRecordWhoseKeyIdIsGoneIsUnreadable() {
        StoredResponse sealed = only("2026-10", OLD).seal(KEY, RESPONSE);

        assertThatThrownBy(() -> only("2026-11", NEW).open(KEY, sealed))
                .isInstanceOf(StoredResponseUnreadableException.class)
                .hasMessageContaining("\"2026-10\"").hasMessageContaining(KEY.digest())
                .hasMessageNotContaining(KEY.value());
    }

    @Test
    void alteredRecordsAndRecordsCopiedToAnotherKeyOrStatusFailTheirTag() {
        AesGcmProtection protection = only("k1", OLD);
        StoredResponse sealed = protection.seal(KEY, RESPONSE);
        byte[] body = sealed.body();
        body[body.length - 20] ^= 1;

        assertThatThrownBy(() -> protection.open(KEY, StoredResponse.of(201, body)))
                .isInstanceOf(StoredResponseUnreadableException.class).hasMessageContaining("integrity check");
        assertThatThrownBy(() -> protection.open(IdempotencyKey.of("user-43|POST /payments", "key-0001"), sealed))
                .as("another caller's scope").isInstanceOf(StoredResponseUnreadableException.class);
        assertThatThrownBy(() -> protection.open(KEY, StoredResponse.of(200, sealed.body())))
                .as("another status").isInstanceOf(StoredResponseUnreadableException.class);
        assertThatThrownBy(() -> only("k1", NEW).open(KEY, sealed)).as("another key under the same id")
                .isInstanceOf(StoredResponseUnreadableException.class).hasMessageContaining("integrity check");
    }

    @Test
    void unsealedResponsesAreRefusedUnlessReadingThemIsTurnedOn() {
        assertThatThrownBy(() -> only("k1", OLD).open(KEY, RESPONSE))
                .isInstanceOf(StoredResponseUnreadableException.class).hasMessageContaining("not encrypted");
        AesGcmProtection migrating = AesGcmProtection.builder().key("k1", OLD).currentKey("k1").readsUnsealed(true)
                .build();

        assertThat(migrating.open(KEY, RESPONSE)).isEqualTo(RESPONSE);
    }

    @Test
    void redactionIsStoredAndReplayedEncrypted() {
        AesGcmProtection aes = only("k1", OLD);
        StoredResponseProtection protection = StoredResponseProtection.redacting(r -> StoredResponse.of(r.status(),
                r.headers(), new String(r.body(), UTF_8).replaceAll("\\d{12}(\\d{4})", "************$1").getBytes(UTF_8)))
                .andThen(aes);

        StoredResponse sealed = protection.seal(KEY, RESPONSE);

        assertThat(new String(aes.open(KEY, sealed).body(), UTF_8)).isEqualTo("{\"card\":\"************1111\"}");
        assertThat(new String(protection.open(KEY, sealed).body(), UTF_8)).isEqualTo("{\"card\":\"************1111\"}");
    }

    @Test
    void configurationIsCheckedWithMessagesThatSayWhatWasWrong() {
        assertThatThrownBy(() -> AesGcmProtection.builder().key("k1", new byte[20]))
                .hasMessage("key \"k1\" must have 16, 24 or 32 bytes (AES-128, AES-192 or AES-256), but had 20");
        assertThatThrownBy(() -> AesGcmProtection.builder().key("k 1", OLD)).hasMessageContaining("but was \"k 1\"");
        assertThatThrownBy(() -> AesGcmProtection.builder().key("k1", OLD).key("k1", NEW))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("already set");
        assertThatThrownBy(() -> AesGcmProtection.builder().key("k1", OLD).currentKey("k2").build())
                .hasMessage("currentKey must be one of the configured key ids [k1], but was \"k2\"");
        assertThatThrownBy(() -> AesGcmProtection.builder().key("k1", OLD).build())
                .hasMessageContaining("currentKey(id)");
        assertThatThrownBy(() -> AesGcmProtection.builder().build()).hasMessageContaining("at least one key");
        assertThat(only("k1", OLD).toString()).isEqualTo("AesGcmProtection[keys=[k1], currentKey=k1]");
    }
}
