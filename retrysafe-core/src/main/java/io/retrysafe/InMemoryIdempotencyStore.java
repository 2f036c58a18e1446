package io.retrysafe;

import io.retrysafe.internal.Require;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimDecision;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.FoundRecord;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The reference store: thread-safe, expiring, bounded, in one JVM. For tests, for single-instance
 * tools, and as the implementation the store contract is checked against first.
 *
 * <p>Bounded by entries ({@link #maxEntries()}) and by bytes ({@link #maxBytes()}: keys, fingerprints
 * and stored responses, estimated), and one scope may hold at most {@link #scopeSharePercent()} of
 * either, so that one caller (or one route) cannot fill it for everybody. At a bound it first drops
 * expired records; if that frees nothing, a claim of a new key fails with
 * {@link StoreUnavailableException} (the engine refuses the request, fail closed, even with
 * fail-open: a full store was reached, and answered). It never evicts a live record: that would
 * silently let a retry run twice. Keys already stored keep replaying at the bound. A completion is
 * never refused (its operation already ran): the byte bound can be passed by the responses of the
 * claims in flight when it was reached.
 *
 * <p>It serves both SPIs: {@link #async()} is the same records as an {@link AsyncIdempotencyStore},
 * each claim decided by the same {@link ClaimDecision}.
 * Every step is a compare-and-set on a map entry, never a wait, so the asynchronous view answers with
 * stages already completed, on the calling thread.
 */
public final class InMemoryIdempotencyStore implements IdempotencyStore {
    public static final int DEFAULT_MAX_ENTRIES = 100_000;
    public static final long DEFAULT_MAX_BYTES = 64L * 1024 * 1024;
    public static final int DEFAULT_SCOPE_SHARE_PERCENT = 50;

    private static final Duration FULL_RETRY_AFTER = Duration.ofSeconds(1);
    /** What an entry costs beyond its key, fingerprint and response: the record, its map node, timestamps. */
    private static final int ENTRY_OVERHEAD_BYTES = 256;

    private final Map<IdempotencyKey, Entry> entries = new ConcurrentHashMap<>();
    private final Map<String, Usage> scopes = new ConcurrentHashMap<>();
    private final Usage total = new Usage();
    private final Clock clock;
    private final int maxEntries;
    private final long maxBytes;
    private final int scopeSharePercent;
    private final int maxScopeEntries;
    private final long maxScopeBytes;
    private final AsyncIdempotencyStore async = new AsyncView();

    public InMemoryIdempotencyStore() {
        this(builder());
    }

    /** @param clock the store's clock: leases and expiry are judged by it, so tests can move time */
    public InMemoryIdempotencyStore(Clock clock, int maxEntries) {
        this(builder().clock(clock).maxEntries(maxEntries));
    }

    private InMemoryIdempotencyStore(Builder b) {
        this.clock = b.clock == null ? Clock.systemUTC() : b.clock;
        this.maxEntries = b.maxEntries == null ? DEFAULT_MAX_ENTRIES : b.maxEntries;
        this.maxBytes = b.maxBytes == null ? DEFAULT_MAX_BYTES : b.maxBytes;
        this.scopeSharePercent = b.scopeSharePercent == null ? DEFAULT_SCOPE_SHARE_PERCENT : b.scopeSharePercent;
        this.maxScopeEntries = (int) Math.max(1, (long) maxEntries * scopeSharePercent / 100);
        this.maxScopeBytes = Math.max(1, maxBytes / 100 * scopeSharePercent);
    }

    public static Builder builder() {
        return new Builder();
    }

    public int maxEntries() {
        return maxEntries;
    }

    public long maxBytes() {
        return maxBytes;
    }

    /** The share of {@link #maxEntries()} and of {@link #maxBytes()} one scope may hold, in percent. */
    public int scopeSharePercent() {
        return scopeSharePercent;
    }

    /** Estimated bytes held now, expired records not yet purged included. */
    public long bytes() {
        return total.bytes.get();
    }

    /** Records held now, expired ones not yet purged included. */
    public int size() {
        return total.entries.get();
    }

    /** Entries and bytes held, in all or in one scope. */
    private static final class Usage {
        final AtomicInteger entries = new AtomicInteger();
        final AtomicLong bytes = new AtomicLong();
    }

    private static long bytesOf(IdempotencyKey key, Entry e) {
        long bytes = ENTRY_OVERHEAD_BYTES + 2L * (key.scope().length() + key.value().length()) + Fingerprint.LENGTH;
        StoredResponse r = e.response();
        if (r != null) {
            bytes += r.body().length;
            for (Map.Entry<String, java.util.List<String>> h : r.headers().entrySet()) {
                for (String v : h.getValue()) {
                    bytes += 2L * (h.getKey().length() + v.length());
                }
            }
        }
        return bytes;
    }

    /** Accounts for {@code after} replacing {@code before} (either null: added or removed). */
    private void account(IdempotencyKey key, Entry before, Entry after) {
        long delta = (after == null ? 0 : bytesOf(key, after)) - (before == null ? 0 : bytesOf(key, before));
        int count = (after == null ? 0 : 1) - (before == null ? 0 : 1);
        total.bytes.addAndGet(delta);
        total.entries.addAndGet(count);
        scopes.compute(key.scope(), (scope, usage) -> {
            Usage u = usage == null ? new Usage() : usage;
            u.bytes.addAndGet(delta);
            return u.entries.addAndGet(count) == 0 ? null : u;
        });
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
            Usage scope = scopes.get(request.key().scope());
            throw new StoreUnavailableException(name(), FULL_RETRY_AFTER,
                    "in-memory idempotency store is full: maxEntries=" + maxEntries + ", entries=" + size()
                            + ", maxBytes=" + maxBytes + ", bytes=" + bytes() + "; this key's scope holds "
                            + (scope == null ? 0 : scope.entries.get()) + " entries and "
                            + (scope == null ? 0 : scope.bytes.get()) + " bytes of at most " + maxScopeEntries
                            + " and " + maxScopeBytes + " (" + scopeSharePercent + "%)", null, false);
        }
        return result;
    }

    /** The atomic claim; null when the key is new and no slot is free. */
    private ClaimResult claimOnce(ClaimRequest request) {
        ClaimResult[] result = new ClaimResult[1];
        entries.compute(request.key(), (key, existing) -> {
            Instant now = clock.instant();
            if (existing == null) {
                Entry claimed = claimed(request, 1, now, now);
                if (!reserve(key, claimed)) {
                    return null;
                }
                result[0] = new ClaimResult.Claimed(request.token(), 1);
                return claimed;
            }
            FoundRecord found = new FoundRecord(existing.fingerprint(), existing.status(), existing.expired(now),
                    Duration.between(now, existing.leaseExpiresAt()), existing.response());
            ClaimDecision decision = ClaimDecision.of(request.fingerprint(), found);
            if (decision instanceof ClaimDecision.Answer answer) {
                result[0] = answer.result();
                return existing;
            }
            boolean fresh = ((ClaimDecision.TakeOver) decision).fresh();
            int attempt = fresh ? 1 : existing.attempt() + 1;
            result[0] = new ClaimResult.Claimed(request.token(), attempt);
            Entry claimed = claimed(request, attempt, fresh ? now : existing.createdAt(), now);
            account(key, existing, claimed);
            return claimed;
        });
        return result[0];
    }

    private static Entry claimed(ClaimRequest request, int attempt, Instant createdAt, Instant now) {
        return new Entry(request.fingerprint(), RecordStatus.IN_PROGRESS, request.token(), attempt, createdAt,
                now.plus(request.leaseTtl()), null, now.plus(request.retention()), null);
    }

    /**
     * Reserves room for a new entry within every bound, of the whole store and of its scope, or
     * reserves nothing: each bound is taken by compare-and-set (or in the scope's compute), and the
     * ones taken are given back when a later one is full, so no bound is ever passed by a claim.
     */
    private boolean reserve(IdempotencyKey key, Entry entry) {
        long bytes = bytesOf(key, entry);
        if (!take(total.entries, maxEntries)) {
            return false;
        }
        if (!take(total.bytes, bytes, maxBytes)) {
            total.entries.decrementAndGet();
            return false;
        }
        boolean[] taken = {false};
        scopes.compute(key.scope(), (scope, usage) -> {
            Usage u = usage == null ? new Usage() : usage;
            if (u.entries.get() < maxScopeEntries && u.bytes.get() + bytes <= maxScopeBytes) {
                u.entries.incrementAndGet();
                u.bytes.addAndGet(bytes);
                taken[0] = true;
            }
            return u.entries.get() == 0 ? null : u;
        });
        if (!taken[0]) {
            total.entries.decrementAndGet();
            total.bytes.addAndGet(-bytes);
        }
        return taken[0];
    }

    private static boolean take(AtomicInteger used, int max) {
        while (true) {
            int current = used.get();
            if (current >= max) {
                return false;
            }
            if (used.compareAndSet(current, current + 1)) {
                return true;
            }
        }
    }

    private static boolean take(AtomicLong used, long amount, long max) {
        while (true) {
            long current = used.get();
            if (current + amount > max) {
                return false;
            }
            if (used.compareAndSet(current, current + amount)) {
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
            Entry changed = change.apply(existing, now);
            account(key, existing, changed);
            return changed;
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
                account(e.getKey(), e.getValue(), null);
                deleted++;
            }
        }
        return deleted;
    }

    @Override
    public String name() {
        return "memory";
    }

    /** This store's records behind the asynchronous SPI: each call is made at once and its stage returned completed. */
    public AsyncIdempotencyStore async() {
        return async;
    }

    /** The asynchronous view: no step here waits, so none needs another thread. */
    private final class AsyncView implements AsyncIdempotencyStore {

        @Override
        public CompletionStage<ClaimResult> tryClaim(ClaimRequest request) {
            return now(() -> InMemoryIdempotencyStore.this.tryClaim(request));
        }

        @Override
        public CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
                Duration retention) {
            return now(() -> InMemoryIdempotencyStore.this.complete(key, token, response, retention));
        }

        @Override
        public CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token) {
            return now(() -> InMemoryIdempotencyStore.this.release(key, token));
        }

        @Override
        public boolean canRenewLease() {
            return true;
        }

        @Override
        public CompletionStage<FencedWrite> renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
            return now(() -> InMemoryIdempotencyStore.this.renewLease(key, token, leaseTtl));
        }

        @Override
        public CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key) {
            return now(() -> InMemoryIdempotencyStore.this.inspect(key));
        }

        @Override
        public CompletionStage<Integer> purgeExpired(int limit) {
            return now(() -> InMemoryIdempotencyStore.this.purgeExpired(limit));
        }

        @Override
        public String name() {
            return InMemoryIdempotencyStore.this.name();
        }

        /** A failure is the stage's, as the SPI says, never a throw. */
        private <R> CompletionStage<R> now(Supplier<R> call) {
            try {
                return CompletableFuture.completedFuture(call.get());
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
    }

    /** Builds an {@link InMemoryIdempotencyStore}; each value may be set once. */
    public static final class Builder {
        private Clock clock;
        private Integer maxEntries;
        private Long maxBytes;
        private Integer scopeSharePercent;

        private Builder() {
        }

        /** The store's clock: leases and expiry are judged by it, so tests can move time. */
        public Builder clock(Clock clock) {
            Require.unset(this.clock, "clock");
            this.clock = Require.notNull(clock, "clock");
            return this;
        }

        public Builder maxEntries(int maxEntries) {
            Require.unset(this.maxEntries, "maxEntries");
            this.maxEntries = Require.between(maxEntries, 1, Integer.MAX_VALUE, "maxEntries");
            return this;
        }

        /** The bound of keys, fingerprints and stored responses together, estimated in bytes. */
        public Builder maxBytes(long maxBytes) {
            Require.unset(this.maxBytes, "maxBytes");
            if (maxBytes < 1024) {
                throw new IllegalArgumentException("maxBytes must be at least 1024, but was " + maxBytes);
            }
            this.maxBytes = maxBytes;
            return this;
        }

        /** The share of the entries and of the bytes one scope may hold, in percent (100: no share of its own). */
        public Builder scopeSharePercent(int scopeSharePercent) {
            Require.unset(this.scopeSharePercent, "scopeSharePercent");
            this.scopeSharePercent = Require.between(scopeSharePercent, 1, 100, "scopeSharePercent");
            return this;
        }

        public InMemoryIdempotencyStore build() {
            return new InMemoryIdempotencyStore(this);
        }
    }
}
