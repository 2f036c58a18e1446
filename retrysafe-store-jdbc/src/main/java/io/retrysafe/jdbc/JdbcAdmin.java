package io.retrysafe.jdbc;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.RetrySafeException;
import io.retrysafe.internal.Hex;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.internal.AdminRow;
import io.retrysafe.jdbc.internal.RecordCounts;
import io.retrysafe.jdbc.internal.SqlDialect;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The operators' view of a {@link JdbcIdempotencyStore}'s table: look at one record, list records
 * by status and age (stuck keys), free a stuck key, and count what the table holds. Every statement
 * takes its values as bind parameters and its time from the database's clock; each call is its own
 * short transaction. Nothing here is on the request path or decides anything for a request.
 *
 * <pre>{@code
 * JdbcAdmin admin = JdbcAdmin.of(store);
 * List<JdbcAdmin.RecordSummary> stuck = admin.list(RecordStatus.IN_PROGRESS, Duration.ofMinutes(5), 100);
 * boolean freed = admin.release("user-42:POST /payments", key, 1); // attempt 1, IN_PROGRESS → FAILED; retried as attempt 2
 * JdbcAdmin.Stats stats = admin.stats();
 * }</pre>
 *
 * <p>Listings show a key's {@linkplain IdempotencyKey#digest() digest}, never the key itself.
 * {@link #list} and {@link #stats} read the whole table (there is no index on status or
 * {@code created_at}): run them as an operator, not on a schedule every second.
 */
public final class JdbcAdmin {
    /** The most records one {@link #list} returns. */
    public static final int MAX_LIMIT = 10_000;
    /** The longest {@code olderThan} a {@link #list} accepts; no record lives this long. */
    public static final Duration MAX_OLDER_THAN = Duration.ofDays(3_650);

    private static final System.Logger LOG = System.getLogger(JdbcAdmin.class.getName());

    private final JdbcIdempotencyStore store;

    private JdbcAdmin(JdbcIdempotencyStore store) {
        this.store = store;
    }

    public static JdbcAdmin of(JdbcIdempotencyStore store) {
        return new JdbcAdmin(Require.notNull(store, "store"));
    }

    public JdbcIdempotencyStore store() {
        return store;
    }

    /**
     * The live record of {@code (scope, key)}, as {@link JdbcIdempotencyStore#inspect} reads it: a
     * record past its {@code expires_at} is absent, purged or not.
     *
     * @throws io.retrysafe.InvalidKeyException if {@code key} breaks {@link io.retrysafe.KeyRules#DEFAULT}
     */
    public Optional<IdempotencyRecord> inspect(String scope, String key) {
        return store.inspect(IdempotencyKey.of(scope, key));
    }

    /**
     * Live records created at least {@code olderThan} ago, oldest first, at most {@code limit}.
     * With {@code status} {@link RecordStatus#IN_PROGRESS}, these are the candidates for stuck keys;
     * {@code null} lists every status. The age is since the record was created, its first attempt:
     * a key taken over since shows {@code attempt > 1} and a lease that is alive.
     */
    public List<RecordSummary> list(RecordStatus status, Duration olderThan, int limit) {
        return listKeyed(status, olderThan, limit).stream().map(KeyedSummary::summary).toList();
    }

    /**
     * As {@link #list}, each summary with its raw key, for a tool that must act on a listed record
     * ({@link #inspect}, {@link #release}) without the operator typing the key: an operator's console.
     * Such a tool keeps the key to itself; {@link KeyedSummary#toString()} leaves it out.
     */
    public List<KeyedSummary> listKeyed(RecordStatus status, Duration olderThan, int limit) {
        Require.notNegative(olderThan, "olderThan");
        if (olderThan.compareTo(MAX_OLDER_THAN) > 0) {
            throw new IllegalArgumentException("olderThan must be at most " + MAX_OLDER_THAN + ", but was " + olderThan);
        }
        Require.between(limit, 1, MAX_LIMIT, "limit");
        List<AdminRow> rows = run(c -> sql().operators().list(c, status, olderThan, limit), "list");
        return rows.stream().map(r -> new KeyedSummary(r.key(), new RecordSummary(r.scope(), digest(r.scope(), r.key()),
                r.status(), r.attempt(), r.createdAt(), r.leaseExpiresAt(), r.expiresAt()))).toList();
    }

    /**
     * Frees a stuck key: if its live record is {@code IN_PROGRESS}, marks it {@code FAILED} and ends
     * its lease, so that the next retry with the same request runs again as the next attempt.
     * Whoever held it can no longer complete it (its completion is refused, as a lost lease). A
     * {@code COMPLETED} or {@code FAILED} record, or an absent one, is left as it is.
     *
     * <p>Safe only when the attempt holding the key is known to be dead or hung, and its effect
     * either did not happen or is safe to repeat: the retry runs the operation again.
     *
     * @return whether the record changed
     * @throws io.retrysafe.InvalidKeyException if {@code key} breaks {@link io.retrysafe.KeyRules#DEFAULT}
     */
    public boolean release(String scope, String key) {
        return release(IdempotencyKey.of(scope, key), null);
    }

    /**
     * Like {@link #release(String, String)}, but only if the record is still the given attempt: what
     * an operator looked at before deciding. If its lease ran out meanwhile and a retry took the key
     * over, that newer attempt is healthy and is left alone.
     *
     * @return whether the record changed
     */
    public boolean release(String scope, String key, int attempt) {
        Require.between(attempt, 1, Integer.MAX_VALUE, "attempt");
        return release(IdempotencyKey.of(scope, key), attempt);
    }

    private boolean release(IdempotencyKey k, Integer attempt) {
        boolean released = run(c -> sql().operators().forceRelease(c, k, attempt, store.lockTimeout()), "release");
        LOG.log(Level.INFO, () -> "[" + store.name() + "] operator release of scope=" + k.scope() + " digest="
                + k.digest() + (attempt == null ? "" : " attempt=" + attempt)
                + (released ? ": IN_PROGRESS -> FAILED" : ": unchanged (not IN_PROGRESS" + (attempt == null ? ")"
                        : " at that attempt)")));
        return released;
    }

    /** Records past {@code expires_at} that no purge has deleted yet: what a purge would delete now. */
    public long countExpired() {
        return run(c -> sql().operators().countExpired(c), "count expired records");
    }

    /** What the table holds now, by the database's clock. */
    public Stats stats() {
        return run(c -> {
            RecordCounts n = sql().operators().counts(c);
            long bytes = sql().operators().tableBytes(c);
            Map<RecordStatus, Long> byStatus = new EnumMap<>(RecordStatus.class);
            byStatus.put(RecordStatus.IN_PROGRESS, n.inProgress());
            byStatus.put(RecordStatus.COMPLETED, n.completed());
            byStatus.put(RecordStatus.FAILED, n.failed());
            Map<AgeBucket, Long> byAge = new EnumMap<>(AgeBucket.class);
            byAge.put(AgeBucket.UNDER_1H, n.underOneHour());
            byAge.put(AgeBucket.UNDER_24H, n.underOneDay());
            byAge.put(AgeBucket.UNDER_7D, n.underOneWeek());
            byAge.put(AgeBucket.OLDER, n.older());
            return new Stats(byStatus, byAge, n.expired(), bytes);
        }, "read stats");
    }

    private SqlDialect sql() {
        return store.sql();
    }

    /** One call, one short transaction, as the store runs its own. */
    private <R> R run(JdbcIdempotencyStore.SqlCall<R> call, String operation) {
        return store.run(call, operation);
    }

    /** The key's {@link IdempotencyKey#digest()}; computed the same way for a row no {@code IdempotencyKey} accepts. */
    static String digest(String scope, String key) {
        try {
            return IdempotencyKey.of(scope, key).digest();
        } catch (RetrySafeException | IllegalArgumentException e) {
            // A row written by hand, outside the key rules: still listed, never shown raw.
            MessageDigest sha = Hex.sha256();
            sha.update(scope.getBytes(StandardCharsets.UTF_8));
            sha.update((byte) 0);
            sha.update(key.getBytes(StandardCharsets.UTF_8));
            return Hex.encode(sha.digest()).substring(0, 12);
        }
    }

    @Override
    public String toString() {
        return "JdbcAdmin[" + store + "]";
    }

    /**
     * One record in a listing. {@code keyDigest} is the key's {@linkplain IdempotencyKey#digest()
     * digest} (the first 12 hex digits of SHA-256 over scope and key), which the engine's log lines
     * show too; the raw key is never part of a summary.
     */
    public record RecordSummary(String scope, String keyDigest, RecordStatus status, int attempt, Instant createdAt,
            Instant leaseExpiresAt, Instant expiresAt) {
    }

    /** A {@link RecordSummary} with the raw key it summarises; {@link #toString()} shows the digest only. */
    public record KeyedSummary(String key, RecordSummary summary) {
        @Override
        public String toString() {
            return "KeyedSummary[" + summary + "]";
        }
    }

    /** The age classes of {@link Stats#byAge()}: time since a record was created. */
    public enum AgeBucket {
        /** Created less than an hour ago. */
        UNDER_1H("<1h"),
        /** One hour to a day. */
        UNDER_24H("<24h"),
        /** One day to a week. */
        UNDER_7D("<7d"),
        /** A week or more. */
        OLDER("older");

        private final String label;

        AgeBucket(String label) {
            this.label = label;
        }

        public String label() {
            return label;
        }
    }

    /**
     * What the table holds. {@code byStatus} and {@code byAge} count live records (every status and
     * every bucket present, zeros included); {@code expired} counts records past {@code expires_at}
     * that no purge has deleted yet (absent for every request). {@code tableBytes} is the table's size
     * with its indexes: PostgreSQL's {@code pg_total_relation_size} (TOAST included), MariaDB's
     * {@code data_length + index_length} from {@code information_schema}, an estimate InnoDB refreshes
     * with the table's statistics.
     */
    public record Stats(Map<RecordStatus, Long> byStatus, Map<AgeBucket, Long> byAge, long expired, long tableBytes) {
        public Stats {
            byStatus = Collections.unmodifiableMap(new EnumMap<>(byStatus));
            byAge = Collections.unmodifiableMap(new EnumMap<>(byAge));
        }

        /** Live records, every status. */
        public long live() {
            return byStatus.values().stream().mapToLong(Long::longValue).sum();
        }

        public long count(RecordStatus status) {
            return byStatus.getOrDefault(status, 0L);
        }
    }
}
