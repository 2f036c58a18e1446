package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.internal.CanonicalJson;
import io.retrysafe.internal.Hex;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class IdempotencyKeysTest {
    private static final Pattern V7 =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    private static final Pattern V4 =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    private static final byte[] PAYLOAD = "{\"amount\":100,\"currency\":\"EUR\"}".getBytes(UTF_8);

    // ---- UUID version 7

    @Test
    void uuidV7HasTheRfc9562LayoutAndTheCurrentTime() {
        long before = System.currentTimeMillis();
        String key = IdempotencyKeys.uuidV7();
        long after = System.currentTimeMillis();

        assertThat(key).hasSize(36).matches(V7);
        UUID uuid = UUID.fromString(key);
        assertThat(uuid.version()).isEqualTo(7);
        assertThat(uuid.variant()).as("variant 10xx (RFC 9562)").isEqualTo(2);
        long millis = uuid.getMostSignificantBits() >>> 16;
        // The counter may carry the timestamp a few milliseconds ahead after a burst in another test.
        assertThat(millis).isBetween(before, after + 1_000);
    }

    @Test
    void uuidV7IsStrictlyIncreasingInOneThread() {
        String previous = IdempotencyKeys.uuidV7();
        for (int i = 0; i < 100_000; i++) {
            String next = IdempotencyKeys.uuidV7();
            assertThat(next.compareTo(previous)).as("key %d: %s after %s", i, next, previous).isPositive();
            previous = next;
        }
    }

    @Test
    void uuidV7IsUniqueAcrossThreadsAndIncreasingWithinEach() throws Exception {
        int threads = 8;
        int perThread = 50_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<List<String>>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                futures.add(pool.submit(() -> {
                    start.await();
                    List<String> keys = new ArrayList<>(perThread);
                    for (int i = 0; i < perThread; i++) {
                        keys.add(IdempotencyKeys.uuidV7());
                    }
                    return keys;
                }));
            }
            start.countDown();
            Set<String> all = new HashSet<>();
            for (Future<List<String>> future : futures) {
                List<String> keys = future.get(60, TimeUnit.SECONDS);
                for (int i = 1; i < keys.size(); i++) {
                    assertThat(keys.get(i).compareTo(keys.get(i - 1))).isPositive();
                }
                all.addAll(keys);
            }
            assertThat(all).hasSize(threads * perThread);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void uuidV7CounterOverflowAndClockStepBackCarryTheTimestampForward() {
        AtomicLong clock = new AtomicLong(1_700_000_000_000L);
        IdempotencyKeys.V7Generator generator = new IdempotencyKeys.V7Generator(clock::get, new Random(7));

        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {   // more than the 12-bit counter holds in one millisecond
            keys.add(generator.next());
        }
        clock.addAndGet(-60_000);             // the clock steps back a minute (NTP)
        for (int i = 0; i < 1_000; i++) {
            keys.add(generator.next());
        }

        for (int i = 1; i < keys.size(); i++) {
            assertThat(keys.get(i).compareTo(keys.get(i - 1))).as("key %d", i).isPositive();
        }
        assertThat(keys).allMatch(k -> V7.matcher(k).matches());
        long first = UUID.fromString(keys.get(0)).getMostSignificantBits() >>> 16;
        long last = UUID.fromString(keys.get(keys.size() - 1)).getMostSignificantBits() >>> 16;
        assertThat(first).isEqualTo(1_700_000_000_000L);
        assertThat(last).as("11,000 keys in one frozen millisecond borrow from the next few")
                .isBetween(1_700_000_000_002L, 1_700_000_000_005L);
    }

    @Test
    void uuidV7StartsACounterAtARandomValueInANewMillisecond() {
        AtomicLong clock = new AtomicLong(1_700_000_000_000L);
        IdempotencyKeys.V7Generator generator = new IdempotencyKeys.V7Generator(clock::get, new Random(7));
        Set<Long> counters = new HashSet<>();
        for (int i = 0; i < 50; i++) {
            clock.incrementAndGet();
            long counter = UUID.fromString(generator.next()).getMostSignificantBits() & 0xFFF;
            assertThat(counter).isLessThan(2048);
            counters.add(counter);
        }
        assertThat(counters).as("not a counter that restarts at 0: that would leave rand_a guessable").hasSizeGreaterThan(40);
    }

    // ---- UUID version 4

    @Test
    void uuidV4IsRandom() {
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            String key = IdempotencyKeys.uuidV4();
            assertThat(key).matches(V4);
            UUID uuid = UUID.fromString(key);
            assertThat(uuid.version()).isEqualTo(4);
            assertThat(uuid.variant()).isEqualTo(2);
            keys.add(key);
        }
        assertThat(keys).hasSize(10_000);
    }

    // ---- intent keys

    @Test
    void intentKeyIsDeterministic() {
        String a = IdempotencyKeys.intent("user-42", "create-payment", PAYLOAD);
        String b = IdempotencyKeys.intent("user-42", "create-payment", PAYLOAD.clone());

        assertThat(a).isEqualTo(b).hasSize(IdempotencyKeys.INTENT_KEY_LENGTH).matches("[0-9a-f]{64}");
        assertThat(KeyRules.DEFAULT.validate(a)).isEqualTo(a);
    }

    @Test
    void intentKeyIsTheDocumentedEncoding() throws IOException {
        LocalDate date = LocalDate.of(2024, 6, 30);

        assertThat(IdempotencyKeys.intent("user-42", "create-payment", PAYLOAD))
                .isEqualTo(documented("user-42", "create-payment", "", PAYLOAD));
        assertThat(IdempotencyKeys.intent("ü", "op", date, new byte[0]))
                .isEqualTo(documented("ü", "op", "2024-06-30", new byte[0]));
    }

    /** The encoding as docs/keys.md and the javadoc describe it, written independently of the implementation. */
    private static String documented(String principal, String operation, String date, byte[] payload) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        for (byte[] field : List.of("retrysafe-intent-v1".getBytes(UTF_8), principal.getBytes(UTF_8),
                operation.getBytes(UTF_8), date.getBytes(UTF_8), payload)) {
            out.writeInt(field.length);
            out.write(field);
        }
        return Hex.encode(Hex.sha256().digest(bytes.toByteArray()));
    }

    @Test
    void intentKeyDiffersByEveryField() {
        LocalDate date = LocalDate.of(2024, 6, 30);
        String base = IdempotencyKeys.intent("user-42", "create-payment", PAYLOAD);

        assertThat(Set.of(base,
                IdempotencyKeys.intent("user-43", "create-payment", PAYLOAD),
                IdempotencyKeys.intent("user-42", "refund-payment", PAYLOAD),
                IdempotencyKeys.intent("user-42", "create-payment", "{\"amount\":101,\"currency\":\"EUR\"}".getBytes(UTF_8)),
                IdempotencyKeys.intent("user-42", "create-payment", date, PAYLOAD),
                IdempotencyKeys.intent("user-42", "create-payment", date.plusDays(1), PAYLOAD),
                IdempotencyKeys.intent("user-42", "create-payment", new byte[0])))
                .hasSize(7);
    }

    @Test
    void intentKeyFieldsCannotBleedIntoEachOther() {
        assertThat(IdempotencyKeys.intent("ab", "c", new byte[0]))
                .isNotEqualTo(IdempotencyKeys.intent("a", "bc", new byte[0]));
        assertThat(IdempotencyKeys.intent("a", "b", "c".getBytes(UTF_8)))
                .isNotEqualTo(IdempotencyKeys.intent("a", "bc", new byte[0]));
    }

    @Test
    void intentFromJsonIgnoresMemberOrderAndWhiteSpace() {
        String a = IdempotencyKeys.intentFromJson("user-42", "create-payment",
                "{\"amount\":100,\"currency\":\"EUR\",\"payee\":{\"iban\":\"DE02\",\"name\":\"A\"}}".getBytes(UTF_8));
        String b = IdempotencyKeys.intentFromJson("user-42", "create-payment",
                "{ \"payee\": {\"name\": \"A\", \"iban\": \"DE02\"},\n \"currency\": \"EUR\", \"amount\": 100.0 }".getBytes(UTF_8));
        String c = IdempotencyKeys.intentFromJson("user-42", "create-payment",
                "{\"amount\":100,\"currency\":\"EUR\",\"payee\":{\"iban\":\"DE03\",\"name\":\"A\"}}".getBytes(UTF_8));

        assertThat(a).isEqualTo(b).isNotEqualTo(c);
        assertThat(a).isEqualTo(IdempotencyKeys.intent("user-42", "create-payment",
                CanonicalJson.canonicalize("{\"payee\":{\"name\":\"A\",\"iban\":\"DE02\"},\"amount\":1e2,\"currency\":\"EUR\"}"
                        .getBytes(UTF_8))));
    }

    @Test
    void intentFromJsonWithABusinessDate() {
        LocalDate date = LocalDate.of(2024, 6, 30);
        byte[] json = "{\"b\":1,\"a\":2}".getBytes(UTF_8);

        assertThat(IdempotencyKeys.intentFromJson("tenant-1", "settle", date, json))
                .isEqualTo(IdempotencyKeys.intentFromJson("tenant-1", "settle", date, "{\"a\":2,\"b\":1}".getBytes(UTF_8)))
                .isNotEqualTo(IdempotencyKeys.intentFromJson("tenant-1", "settle", json));
    }

    @Test
    void intentFromJsonRefusesMalformedJson() {
        assertThatThrownBy(() -> IdempotencyKeys.intentFromJson("user-42", "op", "{\"a\":".getBytes(UTF_8)))
                .isInstanceOf(MalformedJsonException.class);
    }

    @Test
    void intentRefusesMissingFields() {
        assertThatThrownBy(() -> IdempotencyKeys.intent("", "op", PAYLOAD))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("principal must not be empty, but was \"\"");
        assertThatThrownBy(() -> IdempotencyKeys.intent("user-42", "", PAYLOAD))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("operation must not be empty, but was \"\"");
        assertThatThrownBy(() -> IdempotencyKeys.intent(null, "op", PAYLOAD))
                .isInstanceOf(NullPointerException.class).hasMessage("principal must not be null");
        assertThatThrownBy(() -> IdempotencyKeys.intent("user-42", "op", null))
                .isInstanceOf(NullPointerException.class).hasMessage("canonicalPayload must not be null");
        assertThatThrownBy(() -> IdempotencyKeys.intent("user-42", "op", null, PAYLOAD))
                .isInstanceOf(NullPointerException.class).hasMessage("businessDate must not be null");
    }
}
