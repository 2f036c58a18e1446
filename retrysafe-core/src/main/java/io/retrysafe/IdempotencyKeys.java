package io.retrysafe;

import io.retrysafe.internal.CanonicalJson;
import io.retrysafe.internal.Hex;
import io.retrysafe.internal.Require;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.LocalDate;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Makes idempotency keys on the client side. A key names one <em>intent</em> of the client (“pay
 * invoice 17”), is made once when the intent is formed, and is sent unchanged on every retry of it.
 *
 * <ul>
 * <li>{@link #uuidV7()} — the default: a random key for an intent the client keeps (in memory, or
 *     stored with the intent when it must survive a restart).
 * <li>{@link #uuidV4()} — a random key that reveals nothing, not even when it was made.
 * <li>{@link #intent(String, String, byte[])} — a key derived from the intent itself, for a client
 *     that cannot keep a key between a failure and its retry (a batch job that is restarted, an
 *     import that re-reads its file): the same intent always gives the same key.
 * </ul>
 *
 * <h2>Never the time of sending</h2>
 *
 * A key must never contain the time a request is sent (or, on the server, the time it arrived):
 * a retry is sent later, so it would get a new key and run again, and two different requests made
 * in the same millisecond would share one key, so the second would be refused or answered with
 * the first one's response. A {@code uuidV7()} carries a time too, but the time its key was
 * <em>made</em>: made once per intent and reused on every retry, it never changes. A date that
 * belongs to the intent (the business date of a daily settlement) is fine when the client fixes it
 * once, as the {@link #intent(String, String, LocalDate, byte[])} overload does.
 *
 * <pre>{@code
 * String key = IdempotencyKeys.uuidV7();                                        // one per intent
 * String key = IdempotencyKeys.intentFromJson("user-42", "create-payment", body); // same intent → same key
 * }</pre>
 *
 * {@link KeyLint} reports keys that break these rules.
 */
public final class IdempotencyKeys {
    /** The length of an {@link #intent} key: 64 lower-case hex digits of a SHA-256. */
    public static final int INTENT_KEY_LENGTH = 64;

    /**
     * The first field of every intent hash; a new version of the encoding gets a new tag, so keys
     * of two encodings never collide.
     */
    static final String INTENT_TAG = "retrysafe-intent-v1";

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final V7Generator V7 = new V7Generator(System::currentTimeMillis, RANDOM);

    private IdempotencyKeys() {
    }

    /**
     * A UUID version 7 (RFC 9562) in its 36-character lower-case form: a 48-bit Unix timestamp in
     * milliseconds, the version and variant bits, 12 bits of {@code rand_a} and 62 random bits of
     * {@code rand_b} from a {@link SecureRandom}.
     *
     * <p><b>Ordered.</b> Within one JVM every key is greater than the one before it, also when
     * several are made in one millisecond: {@code rand_a} is used as a counter (RFC 9562 §6.2,
     * method 1), started at a random value below 2048 in each new millisecond and incremented
     * within one; when it overflows, or when the clock steps back, the timestamp is carried
     * forward by one millisecond instead, so the order never breaks. Across JVMs keys are ordered by
     * their millisecond only.
     *
     * <p><b>Why ordered keys.</b> A store indexes its records by {@code (scope, key)}. Random keys
     * ({@link #uuidV4()}) land all over the primary-key B-tree: every insert touches a random leaf
     * page, pages split half-empty, and the working set is the whole index. Time-ordered keys keep
     * the index growing at its right edge (within a scope): inserts touch the few most recent
     * pages, which stay in memory, and pages fill up before they split.
     *
     * <p><b>What it reveals.</b> The millisecond the key was made, to whoever sees it; use
     * {@link #uuidV4()} where that matters. It does not reveal a host or a MAC address.
     */
    public static String uuidV7() {
        return V7.next();
    }

    /** A random UUID version 4 (122 random bits from a {@link SecureRandom}), in its 36-character lower-case form. */
    public static String uuidV4() {
        return UUID.randomUUID().toString();
    }

    /**
     * A key derived from the intent: the same principal, operation and payload always give the same
     * key, on any machine, after any restart; any difference gives another key.
     *
     * <p>The payload must be everything that makes this intent different from another one of the
     * same principal and operation, and nothing that changes between retries. Two payments of the
     * same amount to the same payee on purpose are two intents: the payload must tell them apart
     * (an invoice number, the client's own reference), or the second is taken for a retry of the
     * first. A time of sending must never be part of it (see the class comment); for a date that
     * belongs to the intent, use {@link #intent(String, String, LocalDate, byte[])}.
     *
     * <p>The key is the lower-case hex SHA-256 ({@value #INTENT_KEY_LENGTH} characters) of the fields
     * below, each preceded by its length in bytes as a 4-byte big-endian integer, so that no two
     * different lists of fields give the same bytes:
     * <pre>
     * "retrysafe-intent-v1", principal (UTF-8), operation (UTF-8), business date ("" or yyyy-MM-dd), payload
     * </pre>
     * Another service (in any language) that must make the same keys hashes the same bytes.
     *
     * @param principal        whose intent this is (a user, a tenant, an API client); not empty
     * @param operation        what is intended ({@code "create-payment"}); not empty
     * @param canonicalPayload the intent's payload in one canonical encoding; may be empty. For JSON,
     *                         use {@link #intentFromJson(String, String, byte[])}
     */
    public static String intent(String principal, String operation, byte[] canonicalPayload) {
        return hash(principal, operation, "", Require.notNull(canonicalPayload, "canonicalPayload"));
    }

    /**
     * Like {@link #intent(String, String, byte[])}, for an intent that belongs to a business date (a
     * daily settlement, a monthly invoice run), fixed once by the client: the date of the books, not
     * the date of sending, so that a retry after midnight keeps its key. A key with a date never
     * equals a key without one.
     */
    public static String intent(String principal, String operation, LocalDate businessDate, byte[] canonicalPayload) {
        Require.notNull(businessDate, "businessDate");
        return hash(principal, operation, businessDate.toString(),
                Require.notNull(canonicalPayload, "canonicalPayload"));
    }

    /**
     * Like {@link #intent(String, String, byte[])} with the payload's canonical JSON (members sorted by name, no
     * white space, one spelling per number and string): member order, white space and number spelling do not
     * change the key.
     *
     * @throws MalformedJsonException if {@code json} is not one JSON text in UTF-8
     */
    public static String intentFromJson(String principal, String operation, byte[] json) {
        return intent(principal, operation, CanonicalJson.canonicalize(Require.notNull(json, "json")));
    }

    /**
     * Like {@link #intent(String, String, LocalDate, byte[])} with the payload's canonical JSON.
     *
     * @throws MalformedJsonException if {@code json} is not one JSON text in UTF-8
     */
    public static String intentFromJson(String principal, String operation, LocalDate businessDate, byte[] json) {
        return intent(principal, operation, businessDate, CanonicalJson.canonicalize(Require.notNull(json, "json")));
    }

    private static String hash(String principal, String operation, String date, byte[] payload) {
        notEmpty(principal, "principal");
        notEmpty(operation, "operation");
        MessageDigest sha = Hex.sha256();
        field(sha, INTENT_TAG.getBytes(StandardCharsets.US_ASCII));
        field(sha, principal.getBytes(StandardCharsets.UTF_8));
        field(sha, operation.getBytes(StandardCharsets.UTF_8));
        field(sha, date.getBytes(StandardCharsets.US_ASCII));
        field(sha, payload);
        return Hex.encode(sha.digest());
    }

    private static void field(MessageDigest sha, byte[] bytes) {
        sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
        sha.update(bytes);
    }

    private static void notEmpty(String value, String name) {
        Require.notNull(value, name);
        if (value.isEmpty()) {
            throw new IllegalArgumentException(name + " must not be empty, but was \"\"");
        }
    }

    /**
     * The state of {@link #uuidV7()}: the last (timestamp, counter) pair handed out, as one 60-bit
     * number {@code millis << 12 | counter}, so that one compare-and-set keeps keys strictly increasing
     * across threads and a counter overflow carries into the timestamp by itself.
     */
    static final class V7Generator {
        private static final long VERSION_7 = 0x7000L;
        private static final long VARIANT_10 = 0x8000_0000_0000_0000L;
        private static final long RAND_B_MASK = 0x3FFF_FFFF_FFFF_FFFFL;
        /** The counter starts below 2048 in a new millisecond, leaving at least 2048 increments before it overflows. */
        private static final int COUNTER_SEED_BOUND = 1 << 11;

        private final LongSupplier clock;
        private final Random random;
        private final AtomicLong last = new AtomicLong(Long.MIN_VALUE);

        V7Generator(LongSupplier clock, Random random) {
            this.clock = clock;
            this.random = random;
        }

        String next() {
            long randB = random.nextLong() & RAND_B_MASK;
            long seed = -1;
            long state;
            while (true) {
                long previous = last.get();
                long now = clock.getAsLong() & 0xFFFF_FFFF_FFFFL;
                if (previous == Long.MIN_VALUE || now > previous >>> 12) {
                    if (seed < 0) {
                        seed = random.nextInt(COUNTER_SEED_BOUND);
                    }
                    state = (now << 12) | seed;
                } else {
                    state = previous + 1;
                }
                if (last.compareAndSet(previous, state)) {
                    break;
                }
            }
            long msb = ((state >>> 12) << 16) | VERSION_7 | (state & 0xFFF);
            long lsb = VARIANT_10 | randB;
            return new UUID(msb, lsb).toString();
        }
    }
}
