package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.internal.Require;
import io.retrysafe.redis.internal.Script;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The record's encoding, which the blocking store and its asynchronous view share so that either
 * reads what the other wrote: the arguments each script takes, and what its answer and the record's
 * hash ({@code HGETALL}) mean. The scripts themselves are {@link Script}; the key is {@link RedisKeys}.
 */
final class RedisRecords {
    private RedisRecords() {
    }

    /** {@code claim.lua}'s arguments: fingerprint, token, lease and retention in ms. */
    static byte[][] claimArgs(ClaimRequest request) {
        long leaseMillis = millis(request.leaseTtl(), "leaseTtl");
        long retentionMillis = millis(request.retention(), "retention");
        return new byte[][] {request.fingerprint().hex().getBytes(US_ASCII), token(request.token()),
                number(leaseMillis), number(retentionMillis)};
    }

    /** What {@code claim.lua} answered; {@code storeName} names the store in the error of an unknown answer. */
    static ClaimResult claimResult(List<Object> answer, ClaimRequest request, String storeName) {
        String outcome = text(answer.get(0));
        return switch (outcome) {
            case "claimed" -> new ClaimResult.Claimed(request.token(), Math.toIntExact((Long) answer.get(1)));
            case "replay" -> new ClaimResult.Replay(response(answer.get(1), answer.get(2), answer.get(3)));
            case "in_progress" -> new ClaimResult.InProgress(Duration.ofMillis((Long) answer.get(1)));
            case "mismatch" -> new ClaimResult.FingerprintMismatch();
            default -> throw new IllegalStateException("claim script of " + storeName + " answered " + outcome
                    + "; is " + Script.CLAIM.resource() + " from another RetrySafe version?");
        };
    }

    /** {@code complete.lua}'s arguments: token, retention in ms, status, headers, body. */
    static byte[][] completeArgs(OwnerToken token, StoredResponse response, Duration retention) {
        Require.notNull(response, "response");
        long retentionMillis = millis(retention, "retention");
        return new byte[][] {token(token), number(retentionMillis), number(response.status()),
                HeaderCodec.encode(response.headers()).getBytes(UTF_8), response.body()};
    }

    /** {@code release.lua}'s argument: the token. */
    static byte[][] releaseArgs(OwnerToken token) {
        return new byte[][] {token(token)};
    }

    /** {@code renew.lua}'s arguments: token, lease in ms. */
    static byte[][] renewArgs(OwnerToken token, Duration leaseTtl) {
        return new byte[][] {token(token), number(millis(leaseTtl, "leaseTtl"))};
    }

    /** What a fenced script (complete, release, renew) answered: 1 if the token held the key. */
    static FencedWrite fencedWrite(Long written) {
        return written == 1L ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    /** The record in a hash as {@code HGETALL} returns it; empty when there is none (never written, or expired). */
    static Optional<IdempotencyRecord> record(IdempotencyKey key, Map<byte[], byte[]> raw) {
        if (raw == null || raw.isEmpty()) {
            return Optional.empty(); // never written, or expired and deleted by Redis
        }
        Map<String, byte[]> f = new HashMap<>();
        raw.forEach((field, value) -> f.put(new String(field, US_ASCII), value));
        if (f.get("status") == null) {
            return Optional.empty();
        }
        RecordStatus status = RecordStatus.valueOf(text(f.get("status")));
        Optional<StoredResponse> response = status == RecordStatus.COMPLETED
                ? Optional.of(response(f.get("rstatus"), f.get("rheaders"), f.get("rbody")))
                : Optional.empty();
        return Optional.of(new IdempotencyRecord(key, Fingerprint.ofHex(text(f.get("fingerprint"))), status,
                Integer.parseInt(text(f.get("attempt"))), instant(f.get("created")), instant(f.get("lease")),
                instant(f.get("completed")), instant(f.get("expires")), response));
    }

    /** Redis counts milliseconds: a duration under 1 ms would expire the record as it is written. */
    private static long millis(Duration d, String what) {
        Require.notNull(d, what);
        if (d.isNegative() || d.toMillis() < 1) {
            throw new IllegalArgumentException(what + " must be at least 1 ms (Redis counts milliseconds), but was " + d);
        }
        return d.toMillis();
    }

    private static byte[] token(OwnerToken token) {
        return token.toString().getBytes(US_ASCII);
    }

    private static byte[] number(long n) {
        return Long.toString(n).getBytes(US_ASCII);
    }

    private static String text(Object bytes) {
        return bytes == null ? null : new String((byte[]) bytes, UTF_8);
    }

    private static Instant instant(byte[] millis) {
        return millis == null ? null : Instant.ofEpochMilli(Long.parseLong(new String(millis, US_ASCII)));
    }

    private static StoredResponse response(Object status, Object headers, Object body) {
        return StoredResponse.of(Integer.parseInt(text(status)), HeaderCodec.decode(text(headers)),
                body == null ? new byte[0] : (byte[]) body);
    }
}
