package io.retrysafe.benchmarks;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.redis.RedisFastFilter;
import io.retrysafe.redis.RedisIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.testservices.TestRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What one record costs in Redis: {@code MEMORY USAGE <key> SAMPLES 0} of a {@link RedisIdempotencyStore}
 * record (in progress, and completed with responses of a few sizes) and of a {@link RedisFastFilter}
 * entry (the in-flight marker, and the same responses), as written by the real store and filter, on the
 * server of {@code RETRYSAFE_REDIS_URL} (default {@code redis://127.0.0.1:6379}) under a prefix of its
 * own, deleted at the end. Prints a markdown table.
 *
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.RedisMemoryPerRecord
 * </pre>
 *
 * The responses: status 201 with {@code Content-Type: application/json} and a {@code Location} of 46
 * bytes; bodies of JSON text of 152 bytes (a payment as the example service answers it), 1 KiB and
 * 4 KiB. The scope is {@code user-42:POST /payments}, the key a UUID.
 */
public final class RedisMemoryPerRecord {
    private static final Duration RETENTION = Duration.ofHours(24);
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("{\"account\":\"acc-1\",\"amount\":100}"
            .getBytes(UTF_8));
    private static final String SCOPE = "user-42:POST /payments";
    private static final String SMALL_BODY = "{\"id\":\"0192a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b\",\"account\":\"acc-1\","
            + "\"amount\":100,\"balance\":99900,\"createdAt\":\"2026-11-30T12:00:00.123456Z\",\"status\":\"BOOKED\"}";

    private RedisMemoryPerRecord() {
    }

    public static void main(String[] args) {
        String prefix = "retrysafe-mem:" + UUID.randomUUID().toString().substring(0, 8) + ":";
        RedisClient client = RedisClient.create(TestRedis.standaloneUri());
        try (StatefulRedisConnection<String, String> admin = client.connect();
                RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).keyPrefix(prefix + "s:").build();
                RedisFastFilter filter = RedisFastFilter.builder(client).keyPrefix(prefix + "ff:")
                        .timeout(Duration.ofSeconds(5)).build()) {
            RedisCommands<String, String> redis = admin.sync();
            try {
                List<String> rows = new ArrayList<>();
                IdempotencyKey inProgress = key();
                claim(store, inProgress);
                rows.add(row("store record, in progress", "–", redis, store.redisKey(inProgress)));
                IdempotencyKey marker = key();
                filter.markInFlight(marker, FINGERPRINT);
                rows.add(row("fast-filter marker", "–", redis, filter.redisKey(marker)));
                for (int size : new int[] {SMALL_BODY.length(), 1024, 4096}) {
                    StoredResponse response = response(size);
                    IdempotencyKey k = key();
                    OwnerToken token = claim(store, k);
                    store.complete(k, token, response, RETENTION);
                    rows.add(row("store record, completed", size + " B", redis, store.redisKey(k)));
                    IdempotencyKey f = key();
                    filter.publish(f, FINGERPRINT, response, RETENTION);
                    rows.add(row("fast-filter entry", size + " B", redis, filter.redisKey(f)));
                }
                String server = redis.info("server") + redis.info("memory");
                System.out.println("| record | body | MEMORY USAGE (bytes) | encoding | minus body |");
                System.out.println("| --- | ---: | ---: | --- | ---: |");
                rows.forEach(System.out::println);
                System.out.printf(Locale.ROOT, "%nRedis %s, %s, %s bits; MEMORY USAGE <key> SAMPLES 0.%n",
                        info(server, "redis_version"), info(server, "mem_allocator"), info(server, "arch_bits"));
            } finally {
                ScanIterator.scan(redis, ScanArgs.Builder.matches(prefix + "*").limit(100)).forEachRemaining(redis::unlink);
            }
        } finally {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    private static IdempotencyKey key() {
        return IdempotencyKey.of(SCOPE, UUID.randomUUID().toString());
    }

    private static OwnerToken claim(RedisIdempotencyStore store, IdempotencyKey key) {
        ClaimResult result = store.tryClaim(new ClaimRequest(key, FINGERPRINT, OwnerToken.random(), Duration.ofSeconds(30),
                RETENTION));
        if (!(result instanceof ClaimResult.Claimed claimed)) {
            throw new IllegalStateException("claim of a fresh key answered " + result);
        }
        return claimed.token();
    }

    /** 201, two headers, a JSON body of exactly {@code size} bytes (the small one is a real payment answer). */
    static StoredResponse response(int size) {
        String body;
        if (size == SMALL_BODY.length()) {
            body = SMALL_BODY;
        } else {
            StringBuilder b = new StringBuilder("{\"items\":[");
            while (b.length() < size - 2) {
                b.append("\"x\",");
            }
            b.setLength(size - 2);
            body = b.append("]}").toString();
        }
        return StoredResponse.of(201, Map.of("Content-Type", List.of("application/json"),
                "Location", List.of("/payments/0192a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b")), body.getBytes(UTF_8));
    }

    private static String row(String what, String body, RedisCommands<String, String> redis, String key) {
        CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8).add("USAGE").addKey(key).add("SAMPLES")
                .add(0);
        Long usage = redis.dispatch(CommandType.MEMORY, new IntegerOutput<>(StringCodec.UTF8), args);
        if (usage == null) {
            throw new IllegalStateException("no key " + key + " in Redis");
        }
        String minusBody = body.equals("–") ? "–" : String.valueOf(usage - Integer.parseInt(body.replace(" B", "")));
        return String.format(Locale.ROOT, "| %s | %s | %,d | %s | %s |", what, body, usage, redis.objectEncoding(key),
                minusBody);
    }

    private static String info(String info, String field) {
        Matcher m = Pattern.compile("(?m)^" + field + ":(.*)$").matcher(info);
        return m.find() ? m.group(1).strip() : "?";
    }
}
