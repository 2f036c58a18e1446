package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisLoadingException;
import io.lettuce.core.RedisReadOnlyException;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.internal.Hex;
import io.retrysafe.redis.internal.Script;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The builder's checks and the key layout; no Redis needed (the client is never connected). */
class RedisIdempotencyStoreTest {
    private static RedisClient client;

    @BeforeAll
    static void createClient() {
        client = RedisClient.create();
    }

    @AfterAll
    static void shutdownClient() {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }

    @Test
    void defaults() {
        RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).build();

        assertThat(store.keyPrefix()).isEqualTo(RedisIdempotencyStore.DEFAULT_KEY_PREFIX).isEqualTo("retrysafe:");
        assertThat(store.name()).isEqualTo(RedisIdempotencyStore.DEFAULT_NAME).isEqualTo("redis");
        assertThat(store.commandTimeout()).isEqualTo(RedisIdempotencyStore.DEFAULT_COMMAND_TIMEOUT);
        assertThat(store.purgeExpired(1000)).as("purgeExpired: Redis expires records itself").isZero();
    }

    @Test
    void redisKeyIsPrefixAndHashTagOfSha256OverScopeZeroKey() {
        RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).keyPrefix("app:").build();
        IdempotencyKey key = IdempotencyKey.of("user-42:POST /payments", "a b*{x}");

        byte[] input = "user-42:POST /payments\0a b*{x}".getBytes(UTF_8);
        assertThat(store.redisKey(key)).isEqualTo("app:{" + Hex.encode(Hex.sha256().digest(input)) + "}");
        assertThat(store.redisKey(IdempotencyKey.of("user-42:POST /payments", "a b*{y}")))
                .isNotEqualTo(store.redisKey(key));
        assertThat(store.redisKey(IdempotencyKey.of("user-43:POST /payments", "a b*{x}")))
                .as("same key in another scope").isNotEqualTo(store.redisKey(key));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a{b", "a}b", "app:*", "a?", "[a]", "a\\b", "a b", "é:", "a\tb"})
    void keyPrefixThatWouldMoveTheHashTagOrBreakPatternsIsRefused(String prefix) {
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).keyPrefix(prefix))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix")
                .hasMessageContaining(prefix.isEmpty() ? "but had 0" : "but was \"" + prefix + "\"");
    }

    @Test
    void keyPrefixLongerThan64IsRefused() {
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).keyPrefix("p".repeat(65)))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("keyPrefix must have 1 to 64 characters, but had 65");
    }

    @Test
    void valuesMayBeSetOnce() {
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).keyPrefix("a:").keyPrefix("b:"))
                .isInstanceOf(IllegalStateException.class).hasMessage("keyPrefix was already set to a:");
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).name("a").name("b"))
                .isInstanceOf(IllegalStateException.class).hasMessage("name was already set to a");
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).commandTimeout(Duration.ofSeconds(1))
                .commandTimeout(Duration.ofSeconds(2))).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void commandTimeoutAndNameAreChecked() {
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).commandTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was PT0S");
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).commandTimeout(Duration.ofNanos(10)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least 1 ms, but was PT0.00000001S");
        assertThatThrownBy(() -> RedisIdempotencyStore.builder(client).name(" "))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was \" \"");
    }

    /** Fail-open runs past a Redis that could not answer, never past an error it answered with. */
    @Test
    void onlyARedisThatCouldNotAnswerIsUnreachable() {
        assertThat(RedisIdempotencyStore.isUnreachable(new RedisConnectionException("Connection refused"))).isTrue();
        assertThat(RedisIdempotencyStore.isUnreachable(new RedisCommandTimeoutException("Command timed out")))
                .isTrue();
        assertThat(RedisIdempotencyStore.isUnreachable(new RedisException("Connection closed"))).isTrue();
        assertThat(RedisIdempotencyStore.isUnreachable(
                new RedisLoadingException("LOADING Redis is loading the dataset in memory"))).isTrue();
        assertThat(RedisIdempotencyStore.isUnreachable(
                new RedisReadOnlyException("READONLY You can't write against a read only replica."))).isTrue();
        assertThat(RedisIdempotencyStore.isUnreachable(
                new RedisCommandExecutionException("CLUSTERDOWN The cluster is down"))).isTrue();

        assertThat(RedisIdempotencyStore.isUnreachable(new RedisCommandExecutionException(
                "WRONGTYPE Operation against a key holding the wrong kind of value"))).isFalse();
        assertThat(RedisIdempotencyStore.isUnreachable(new RedisCommandExecutionException(
                "ERR user_script:33: attempt to compare number with nil"))).isFalse();
        assertThat(RedisIdempotencyStore.isUnreachable(new RedisCommandExecutionException(
                "OOM command not allowed when used memory > 'maxmemory'."))).as("full: it answered").isFalse();
    }

    @Test
    void everyScriptHasItsOwnSha1() {
        assertThat(Arrays.stream(Script.values()).map(Script::sha))
                .allSatisfy(sha -> assertThat(sha).matches("[0-9a-f]{40}")).doesNotHaveDuplicates();
        // That Redis computes the same SHA-1 is checked where it can be: RedisStoreIT asks SCRIPT EXISTS.
    }
}
