package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.internal.Require;
import io.retrysafe.redis.LazyConnection.Link;
import io.retrysafe.redis.LazyConnection.NotConnected;
import io.retrysafe.redis.internal.Script;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Records in Redis (standalone, Sentinel or Cluster) through Lettuce. A standalone store: each call
 * is one Lua script that Redis runs atomically, so a claim is visible to every duplicate before the
 * operation runs.
 *
 * <pre>{@code
 * RedisClient client = RedisClient.create("redis://127.0.0.1:6379");
 * RedisIdempotencyStore store = RedisIdempotencyStore.builder(client).build();
 * RetrySafe retrySafe = RetrySafe.builder(store).build();
 * }</pre>
 *
 * <p>Each record is one hash at {@code keyPrefix + "{" + hex(sha256(scope \0 key)) + "}"}: the key
 * the client sent never reaches a Redis key name, and the hash tag would keep any further keys of
 * the record in its cluster slot. Claim, complete, release and renew are each one script, loaded once per
 * connection with {@code SCRIPT LOAD} and called with {@code EVALSHA} (loaded again when a server
 * answers {@code NOSCRIPT}). Leases and expiry are judged by the server's {@code TIME}; every write
 * sets the record's expiry ({@code PEXPIREAT}) in the same script, so an expired record is absent
 * because Redis deleted it, and {@link #purgeExpired} has nothing to do.
 *
 * <p>The store opens one connection of its own on first use, and a new one when Lettuce reports it
 * lost, rather than waiting for Lettuce's own reconnection (the client stays the application's:
 * {@link #close()} closes the connection, not the client). Every failure of Redis is a
 * {@link StoreUnavailableException} naming this store: the engine answers it with 503 and does not
 * run the operation.
 */
public final class RedisIdempotencyStore implements IdempotencyStore, AutoCloseable {
    public static final String DEFAULT_KEY_PREFIX = "retrysafe:";
    public static final String DEFAULT_NAME = "redis";
    /** Bound on every command of the store's connection; replaces the client's (Lettuce's default is 60 s). */
    public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);

    static final int MAX_KEY_PREFIX_LENGTH = RedisKeys.MAX_PREFIX_LENGTH;
    private static final Duration RETRY_AFTER = Duration.ofSeconds(1);
    private static final System.Logger LOG = System.getLogger(RedisIdempotencyStore.class.getName());

    private final String topology;
    private final String keyPrefix;
    private final byte[] keyPrefixBytes;
    private final String name;
    private final Duration commandTimeout;
    private final LazyConnection connection;

    private RedisIdempotencyStore(Builder b) {
        this.topology = b.topology;
        this.keyPrefix = b.keyPrefix == null ? DEFAULT_KEY_PREFIX : b.keyPrefix;
        this.keyPrefixBytes = keyPrefix.getBytes(US_ASCII);
        this.name = b.name == null ? DEFAULT_NAME : b.name;
        this.commandTimeout = b.commandTimeout == null ? DEFAULT_COMMAND_TIMEOUT : b.commandTimeout;
        this.connection = new LazyConnection("retrysafe-" + name + "-connect",
                "idempotency store " + name + " is closed", b.connector, this::initialise, commandTimeout, RETRY_AFTER,
                () -> LOG.log(Level.INFO, () -> "[" + name + "] connection to Redis lost; opening a new one"),
                () -> LOG.log(Level.DEBUG, () -> "[" + name + "] connected to Redis (" + topology
                        + "), scripts loaded"));
    }

    /**
     * A store on a standalone Redis, or a Sentinel-managed one: the client's {@code RedisURI}
     * ({@code RedisClient.create(uri)}) says which; with a Sentinel URI Lettuce finds the master.
     */
    public static Builder builder(RedisClient client) {
        Require.notNull(client, "client");
        return new Builder(Link.to(client), "standalone");
    }

    /** A store on a Redis Cluster; the client's seed URIs are where Lettuce learns the topology. */
    public static Builder builder(RedisClusterClient client) {
        Require.notNull(client, "client");
        return new Builder(Link.to(client), "cluster");
    }

    public String keyPrefix() {
        return keyPrefix;
    }

    public Duration commandTimeout() {
        return commandTimeout;
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * The Redis key that holds {@code key}'s record, for an operator ({@code redis-cli HGETALL …}):
     * {@code keyPrefix + "{" + hex(sha256(UTF-8(scope) 0x00 UTF-8(key))) + "}"}. A key is printable
     * ASCII, so the separator cannot be confused with part of it.
     */
    public String redisKey(IdempotencyKey key) {
        return new String(recordKey(key), US_ASCII);
    }

    private byte[] recordKey(IdempotencyKey key) {
        return RedisKeys.recordKey(keyPrefixBytes, key);
    }

    // ------------------------------------------------------------------------------------------
    // The SPI
    // ------------------------------------------------------------------------------------------

    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        long leaseMillis = millis(request.leaseTtl(), "leaseTtl");
        long retentionMillis = millis(request.retention(), "retention");
        List<Object> answer = run(Script.CLAIM, "claim", recordKey(request.key()),
                request.fingerprint().hex().getBytes(US_ASCII),
                request.token().toString().getBytes(US_ASCII),
                number(leaseMillis),
                number(retentionMillis));
        String outcome = text(answer.get(0));
        return switch (outcome) {
            case "claimed" -> new ClaimResult.Claimed(request.token(), Math.toIntExact((Long) answer.get(1)));
            case "replay" -> new ClaimResult.Replay(response(answer.get(1), answer.get(2), answer.get(3)));
            case "in_progress" -> new ClaimResult.InProgress(Duration.ofMillis((Long) answer.get(1)));
            case "mismatch" -> new ClaimResult.FingerprintMismatch();
            default -> throw new IllegalStateException("claim script of " + name + " answered " + outcome
                    + "; is " + Script.CLAIM.resource() + " from another RetrySafe version?");
        };
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        Require.notNull(response, "response");
        long retentionMillis = millis(retention, "retention");
        Long written = run(Script.COMPLETE, "complete", recordKey(key),
                token.toString().getBytes(US_ASCII),
                number(retentionMillis),
                number(response.status()),
                HeaderCodec.encode(response.headers()).getBytes(UTF_8),
                response.body());
        return written == 1L ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        Long written = run(Script.RELEASE, "release", recordKey(key), token.toString().getBytes(US_ASCII));
        return written == 1L ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public boolean canRenewLease() {
        return true;
    }

    @Override
    public FencedWrite renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        Long written = run(Script.RENEW, "renew lease", recordKey(key), token.toString().getBytes(US_ASCII),
                number(millis(leaseTtl, "leaseTtl")));
        return written == 1L ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        Link l = link("inspect");
        Map<byte[], byte[]> raw;
        try {
            raw = l.commands().hgetall(recordKey(key));
        } catch (RedisException e) {
            throw failure("inspect", e);
        }
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

    /**
     * Does nothing and returns 0: every record carries its expiry ({@code PEXPIREAT}), and Redis
     * deletes it when it runs out, so there is never an expired record to purge. No purge job is
     * needed for this store.
     */
    @Override
    public int purgeExpired(int limit) {
        Require.between(limit, 1, Integer.MAX_VALUE, "limit");
        return 0;
    }

    /** Closes the store's connection (not the client, which stays the application's); idempotent. */
    @Override
    public void close() {
        connection.close();
    }

    // ------------------------------------------------------------------------------------------
    // Redis
    // ------------------------------------------------------------------------------------------

    /**
     * Runs a script by its SHA-1. A server that does not know it (restarted, {@code SCRIPT FLUSH},
     * a replica promoted in a failover) answers {@code NOSCRIPT}: the script is loaded again and
     * the call made once more. Nothing ran on the first call, so repeating it is safe.
     */
    private <T> T run(Script script, String operation, byte[] recordKey, byte[]... args) {
        Link l = link(operation);
        byte[][] keys = {recordKey};
        try {
            try {
                return l.commands().evalsha(script.sha(), script.output(), keys, args);
            } catch (RedisNoScriptException e) {
                LOG.log(Level.INFO, () -> "[" + name + "] Redis answered NOSCRIPT for " + script.resource()
                        + "; loading it again");
                l.commands().scriptLoad(script.source());
                return l.commands().evalsha(script.sha(), script.output(), keys, args);
            }
        } catch (RedisException e) {
            throw failure(operation, e);
        }
    }

    /**
     * The connection, with its scripts loaded: opened on first use, and again when Lettuce reports
     * it lost, without waiting out Lettuce's own reconnection (why: {@link LazyConnection}). A call
     * waits for it at most {@code commandTimeout}, so that a Redis that does not answer costs a call
     * no more than a command would; a failed attempt is not repeated for a second (calls in between
     * fail at once), and every call waiting meanwhile shares the one attempt.
     */
    private Link link(String operation) {
        try {
            return connection.get();
        } catch (NotConnected e) {
            Throwable cause = e.getCause();
            throw switch (e.reason()) {
                case COOLING_DOWN -> unavailable(operation, "not connected to Redis; the last attempt to connect, less "
                        + "than " + RETRY_AFTER.toMillis() + " ms ago, failed: " + cause.getMessage(), cause);
                case STILL_CONNECTING -> unavailable(operation, "not connected to Redis within "
                        + commandTimeout.toMillis() + " ms (commandTimeout); still connecting", cause);
                case FAILED -> cause instanceof RedisException re
                        ? unavailable(operation, "connecting to Redis failed: " + re.getMessage(), re)
                        : new IllegalStateException("connecting to Redis failed: " + cause, cause);
                case INTERRUPTED -> new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name
                        + " failed to " + operation + ": interrupted while connecting to Redis", cause);
            };
        }
    }

    /** Readies a new connection, before any call uses it: loads the scripts (a restarted server knows none). */
    private void initialise(Link fresh) {
        for (Script script : Script.STORE) {
            fresh.commands().scriptLoad(script.source());
        }
        warnIfEvicting(fresh.commands());
    }

    /**
     * A record evicted under memory pressure is a key forgotten while live: its retry would run
     * again. Only {@code noeviction} makes a full Redis refuse writes (a 503) instead. Best effort:
     * a server that hides {@code INFO} is not an error.
     */
    private void warnIfEvicting(RedisClusterCommands<byte[], byte[]> commands) {
        try {
            String info = commands.info("memory");
            for (String line : info.split("\r?\n")) {
                if (line.startsWith("maxmemory_policy:")) {
                    String policy = line.substring("maxmemory_policy:".length()).strip();
                    if (!policy.equals("noeviction")) {
                        LOG.log(Level.WARNING, () -> "[" + name + "] Redis maxmemory-policy is " + policy
                                + ": when Redis is full it may evict live idempotency records, and their retries "
                                + "would run again; use noeviction");
                    }
                }
            }
        } catch (RedisException e) {
            LOG.log(Level.DEBUG, () -> "[" + name + "] could not read INFO memory: " + e.getMessage());
        }
    }

    private StoreUnavailableException failure(String operation, RedisException e) {
        return unavailable(operation, e.getMessage(), e);
    }

    private StoreUnavailableException unavailable(String operation, String what, Throwable cause) {
        return new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name + " failed to " + operation
                + " (Redis " + topology + ", keyPrefix " + keyPrefix + "): " + what, cause);
    }

    // ------------------------------------------------------------------------------------------
    // Values
    // ------------------------------------------------------------------------------------------

    /** Redis counts milliseconds: a duration under 1 ms would expire the record as it is written. */
    private static long millis(Duration d, String what) {
        Require.notNull(d, what);
        if (d.isNegative() || d.toMillis() < 1) {
            throw new IllegalArgumentException(what + " must be at least 1 ms (Redis counts milliseconds), but was " + d);
        }
        return d.toMillis();
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

    @Override
    public String toString() {
        return "RedisIdempotencyStore[name=" + name + ", topology=" + topology + ", keyPrefix=" + keyPrefix
                + ", commandTimeout=" + commandTimeout + "]";
    }

    /** Builds a {@link RedisIdempotencyStore}; each value may be set once. */
    public static final class Builder {
        private final Supplier<Link> connector;
        private final String topology;
        private String keyPrefix;
        private String name;
        private Duration commandTimeout;

        private Builder(Supplier<Link> connector, String topology) {
            this.connector = connector;
            this.topology = topology;
        }

        /**
         * What every Redis key of this store starts with ({@value #DEFAULT_KEY_PREFIX} by default), so
         * that several applications or environments can share a Redis, and an ACL can grant
         * {@code ~prefix*}. 1 to {@value #MAX_KEY_PREFIX_LENGTH} printable ASCII characters, without
         * space, braces (they would move the cluster hash tag) or glob characters {@code * ? [ ] \}
         * (they would break {@code SCAN MATCH} and ACL patterns).
         */
        public Builder keyPrefix(String keyPrefix) {
            Require.unset(this.keyPrefix, "keyPrefix");
            RedisKeys.checkPrefix(keyPrefix);
            this.keyPrefix = keyPrefix;
            return this;
        }

        /** The store's name in logs, metrics and errors ({@value #DEFAULT_NAME} by default). */
        public Builder name(String name) {
            Require.unset(this.name, "name");
            this.name = Require.notBlank(name, "name");
            return this;
        }

        /**
         * How long one call waits for Redis before it fails with {@link StoreUnavailableException}
         * (2 s by default); set on the store's own connection, replacing the client's timeout, and
         * bounds the wait for a connection too. While Redis is down, a request waits at most this
         * long for its 503.
         */
        public Builder commandTimeout(Duration commandTimeout) {
            Require.unset(this.commandTimeout, "commandTimeout");
            this.commandTimeout = Require.atLeastOneMilli(commandTimeout, "commandTimeout");
            return this;
        }

        public RedisIdempotencyStore build() {
            return new RedisIdempotencyStore(this);
        }
    }
}
