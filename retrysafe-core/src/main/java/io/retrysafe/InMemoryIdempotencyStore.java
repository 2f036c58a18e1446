package io.retrysafe;

import io.retrysafe.internal.Require;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The reference store: thread-safe, expiring, bounded, in one JVM. For tests, for single-instance
 * tools, and as the implementation the store contract is checked against first.
 *
 * <p>At {@link #maxEntries()} it first drops expired records; if every record is still live, a claim
 * of a new key fails with {@link StoreUnavailableException} (the engine refuses the request, fail
 * closed, even with fail-open: a full store was reached, and answered). It never evicts a live
 * record: that would silently let a retry run twice. Keys already stored keep replaying at the bound.
 */
public final class InMemoryIdempotencyStore implements IdempotencyStore {
    public static final int DEFAULT_MAX_ENTRIES = 100_000;

    private static final Duration FULL_RETRY_AFTER = Duration.ofSeconds(1);

    private final Map<IdempotencyKey, Entry> entries = new ConcurrentHashMap<>();
    private final AtomicInteger size = new AtomicInteger();
    private final Clock clock;
    private final int maxEntries;

    public InMemoryIdempotencyStore() {
        this(Clock.systemUTC(), DEFAULT_MAX_ENTRIES);
    }

    /** @param clock the store's clock: leases and expiry are judged by it, so tests can move time */
    public InMemoryIdempotencyStore(Clock clock, int maxEntries) {
        this.clock = Require.notNull(clock, "clock");
        this.maxEntries = Require.between(maxEntries, 1, Integer.MAX_VALUE, "maxEntries");
    }

    public int maxEntries() {
        return maxEntries;
    }

    /** Records held now, expired ones not yet purged included. */
    public int size() {
        return size.get();
    }

    private record Entry(Fingerprint fingerprint, RecordStatus status, OwnerToken token, int attempt, Instant createdAt,
            Instant leaseExpiresAt, Instant completedAt, Instant expiresAt, StoredResponse response) {

        boolean expired(Instant now) {
            return !now.isBefore(expiresAt);
        }

        boolean heldBy(OwnerToken owner, Instant now) {
            return status == RecordStatus.IN_PROGRESS && token.equals(owner) && !expired(now);
        }
    }

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        ClaimResult result = claimOnce(request);
        if (result == null) {
            // Full: only a new key's claim pays for the scan, and only once per attempt.
            purgeExpired(Integer.MAX_VALUE);
            result = claimOnce(request);
        }
        if (result == null) {
            throw new StoreUnavailableException(name(), FULL_RETRY_AFTER,
                    "in-memory idempotency store is full: maxEntries=" + maxEntries + ", live=" + size.get(), null,
                    false);
        }
        return result;
    }

    /** The atomic claim; null when the key is new and no slot is free. */
    private ClaimResult claimOnce(ClaimRequest request) {
        ClaimResult[] result = new ClaimResult[1];
        entries.compute(request.key(), (key, existing) -> {
            Instant now = clock.instant();
            if (existing == null || existing.expired(now)) {
                if (existing == null && !reserveSlot()) {
                    return null;
                }
                result[0] = new ClaimResult.Claimed(request.token(), 1);
                return claimed(request, 1, now, now);
            }
            if (!existing.fingerprint().matches(request.fingerprint())) {
                result[0] = new ClaimResult.FingerprintMismatch();
                return existing;
            }
            if (existing.status() == RecordStatus.COMPLETED) {
                result[0] = new ClaimResult.Replay(existing.response());
                return existing;
            }
            if (existing.status() == RecordStatus.IN_PROGRESS && now.isBefore(existing.leaseExpiresAt())) {
                result[0] = new ClaimResult.InProgress(Duration.between(now, existing.leaseExpiresAt()));
                return existing;
            }
            int attempt = existing.attempt() + 1;
            result[0] = new ClaimResult.Claimed(request.token(), attempt);
            return claimed(request, attempt, existing.createdAt(), now);
        });
        return result[0];
    }

    private static Entry claimed(ClaimRequest request, int attempt, Instant createdAt, Instant now) {
        return new Entry(request.fingerprint(), RecordStatus.IN_PROGRESS, request.token(), attempt, createdAt,
                now.plus(request.leaseTtl()), null, now.plus(request.retention()), null);
    }

    private boolean reserveSlot() {
        while (true) {
            int current = size.get();
            if (current >= maxEntries) {
                return false;
            }
            if (size.compareAndSet(current, current + 1)) {
                return true;
            }
        }
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        Require.notNull(response, "response");
        return fenced(key, token, (e, now) -> new Entry(e.fingerprint(), RecordStatus.COMPLETED, e.token(), e.attempt(),
                e.createdAt(), e.leaseExpiresAt(), now, now.plus(retention), response));
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        return fenced(key, token, (e, now) -> new Entry(e.fingerprint(), RecordStatus.FAILED, e.token(), e.attempt(),
                e.createdAt(), e.leaseExpiresAt(), null, e.expiresAt(), null));
    }

    @Override
    public boolean canRenewLease() {
        return true;
    }

    @Override
    public FencedWrite renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        Require.positive(leaseTtl, "leaseTtl");
        return fenced(key, token, (e, now) -> new Entry(e.fingerprint(), e.status(), e.token(), e.attempt(),
                e.createdAt(), now.plus(leaseTtl), e.completedAt(), e.expiresAt(), e.response()));
    }

    private FencedWrite fenced(IdempotencyKey key, OwnerToken token, java.util.function.BiFunction<Entry, Instant, Entry> change) {
        FencedWrite[] result = {FencedWrite.LEASE_LOST};
        entries.computeIfPresent(key, (k, existing) -> {
            Instant now = clock.instant();
            if (!existing.heldBy(token, now)) {
                return existing;
            }
            result[0] = FencedWrite.COMMITTED;
            return change.apply(existing, now);
        });
        return result[0];
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        Entry e = entries.get(key);
        if (e == null || e.expired(clock.instant())) {
            return Optional.empty();
        }
        return Optional.of(new IdempotencyRecord(key, e.fingerprint(), e.status(), e.attempt(), e.createdAt(),
                e.leaseExpiresAt(), e.completedAt(), e.expiresAt(), Optional.ofNullable(e.response())));
    }

    @Override
    public int purgeExpired(int limit) {
        Require.between(limit, 1, Integer.MAX_VALUE, "limit");
        Instant now = clock.instant();
        int deleted = 0;
        for (Map.Entry<IdempotencyKey, Entry> e : entries.entrySet()) {
            if (deleted >= limit) {
                break;
            }
            if (e.getValue().expired(now) && entries.remove(e.getKey(), e.getValue())) {
                size.decrementAndGet();
                deleted++;
            }
        }
        return deleted;
    }

    @Override
    public String name() {
        return "memory";
    }
}
