package io.retrysafe.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Completed responses kept in this process, in front of the fast path: a retry of a key answered here a moment
 * ago is answered again without a round trip. Only what the store committed is kept (a response never changes
 * once committed, until its record is purged), never an in-flight marker. Bounded by bytes, the least recently
 * used dropped first, and each entry by its own expiry. Not API.
 */
final class LocalReplays {
    /** What an entry costs besides its body and headers: the key, the fingerprint, the map's node. */
    private static final int ENTRY_OVERHEAD = 256;

    private final long maxBytes;
    private final long ttlNanos;
    private final LinkedHashMap<IdempotencyKey, Entry> entries = new LinkedHashMap<>(64, 0.75f, true);
    private long bytes;

    /** One response, sealed as the store holds it, and the clock's reading after which it is not used. */
    record Entry(Fingerprint fingerprint, StoredResponse sealed, long expiresAt, long size) {
    }

    LocalReplays(long maxBytes, Duration ttl) {
        this.maxBytes = maxBytes;
        this.ttlNanos = ttl.toNanos();
    }

    /** The entry of {@code key}, or null when there is none or it expired at {@code now}. */
    synchronized Entry get(IdempotencyKey key, long now) {
        Entry entry = entries.get(key);
        if (entry != null && now - entry.expiresAt >= 0) {
            remove(key);
            return null;
        }
        return entry;
    }

    /**
     * Keeps {@code sealed} for {@code key} until {@code ttl} from {@code now}, at most this cache's own TTL. A
     * response larger than the whole bound is not kept.
     */
    synchronized void put(IdempotencyKey key, Fingerprint fingerprint, StoredResponse sealed, Duration ttl, long now) {
        long size = size(key, sealed);
        if (size > maxBytes) {
            return;
        }
        long lives = Math.min(ttl.toNanos(), ttlNanos);
        Entry previous = entries.put(key, new Entry(fingerprint, sealed, now + lives, size));
        bytes += size - (previous == null ? 0 : previous.size);
        Iterator<Entry> eldest = entries.values().iterator();
        while (bytes > maxBytes && eldest.hasNext()) {
            bytes -= eldest.next().size;
            eldest.remove();
        }
    }

    synchronized void remove(IdempotencyKey key) {
        Entry removed = entries.remove(key);
        if (removed != null) {
            bytes -= removed.size;
        }
    }

    synchronized long bytes() {
        return bytes;
    }

    long maxBytes() {
        return maxBytes;
    }

    Duration ttl() {
        return Duration.ofNanos(ttlNanos);
    }

    private static long size(IdempotencyKey key, StoredResponse response) {
        long size = ENTRY_OVERHEAD + 2L * (key.scope().length() + key.value().length()) + response.bodyLength();
        for (Map.Entry<String, List<String>> header : response.headers().entrySet()) {
            size += 2L * header.getKey().length();
            for (String value : header.getValue()) {
                size += 2L * value.length() + 16;
            }
        }
        return size;
    }
}
