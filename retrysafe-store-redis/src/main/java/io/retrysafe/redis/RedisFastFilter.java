package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static java.nio.charset.StandardCharsets.UTF_8;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.RedisClusterClient;
import io.retrysafe.Backoff;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.internal.Require;
import io.retrysafe.redis.LazyConnection.Link;
import io.retrysafe.redis.LazyConnection.NotConnected;
import io.retrysafe.redis.internal.Script;
import io.retrysafe.spi.AsyncFastPath;
import io.retrysafe.spi.FastPath;
import java.lang.System.Logger.Level;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Redis as a fast filter in front of the transactional store ({@link FastPath}): a completed
 * response cached in Redis is replayed without touching the database, and an in-flight marker
 * ({@code SET NX PX}) answers a concurrent duplicate early. The database stays the source of truth:
 * this class never decides anything the store has not decided, and when Redis is slow or down every
 * method is a miss or does nothing, so requests go to the store.
 *
 * <pre>{@code
 * RedisClient client = RedisClient.create("redis://127.0.0.1:6379");
 * RedisFastFilter fastFilter = RedisFastFilter.builder(client).build();
 * IdempotentExecutor executor = FastFilterExecutor.builder(
 *         new JdbcTransactionalExecutor(transactional, dataSource), fastFilter, transactional.engine()).build();
 * }</pre>
 *
 * <p>One Redis string per {@code (scope, key)} at
 * {@code keyPrefix + "{" + hex(sha256(scope \0 key)) + "}"} (the store's layout, under another
 * prefix): the in-flight marker, or the committed response with its fingerprint. Every call waits at
 * most {@link #timeout()} and goes through a circuit breaker ({@link #breakerState()}): after
 * {@link #DEFAULT_FAILURE_THRESHOLD} consecutive failures or timeouts it opens, and no call goes to
 * Redis for a backoff that doubles from {@link #DEFAULT_OPEN_BACKOFF} up to
 * {@link #DEFAULT_MAX_OPEN_BACKOFF}; then one probe goes through, and its success closes the breaker.
 *
 * <p>The filter opens one connection of its own on first use (the client stays the application's:
 * {@link #close()} closes the connection, not the client); a first connection that takes longer than
 * the timeout goes on in the background while calls fail.
 */
public final class RedisFastFilter implements FastPath, AutoCloseable {
    public static final String DEFAULT_KEY_PREFIX = "retrysafe:ff:";
    public static final String DEFAULT_NAME = "redis-fast-filter";
    /** Bound on every Redis call; past it the call is a miss and counts as a failure. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMillis(100);
    /** How long an in-flight marker lives if its holder never clears it (it died): the default lease. */
    public static final Duration DEFAULT_MARKER_TTL = OperationPolicy.DEFAULT_LEASE_TTL;
    /** Consecutive failures (errors or timeouts) that open the breaker. */
    public static final int DEFAULT_FAILURE_THRESHOLD = 5;
    /** How long the breaker first stays open; doubled after each failed probe. */
    public static final Duration DEFAULT_OPEN_BACKOFF = Duration.ofSeconds(1);
    /** The longest the breaker stays open before a probe. */
    public static final Duration DEFAULT_MAX_OPEN_BACKOFF = Duration.ofSeconds(30);

    /** The state of the breaker in front of Redis. */
    public enum BreakerState {
        /** Calls go to Redis. */
        CLOSED,
        /** Calls do not go to Redis: every lookup is a miss, every write does nothing. */
        OPEN,
        /** One probe call goes to Redis; its result closes the breaker or opens it again. */
        HALF_OPEN
    }

    /**
     * Hears the fast filter's failures and the breaker's changes of state, for metrics and alerts.
     * Every method does nothing by default; what one throws is logged and swallowed.
     */
    public interface Listener {
        Listener NONE = new Listener() {
        };

        /** The breaker went from {@code from} to {@code to}; called once per change. */
        default void onStateChange(BreakerState from, BreakerState to) {
        }

        /**
         * A Redis call failed or timed out ({@code operation}: {@code lookup}, {@code markInFlight},
         * {@code lookupOrMark}, {@code publish}, {@code clear}); the request went on to the store.
         */
        default void onFailure(String operation, RuntimeException error) {
        }
    }

    static final byte FORMAT_VERSION = 1;
    static final byte MARKER_TYPE = 'M';
    static final byte RESPONSE_TYPE = 'R';
    /** The in-flight marker's value; the fingerprint is not needed (a marker answers 409 to every request). */
    static final byte[] MARKER = {MARKER_TYPE, FORMAT_VERSION};
    private static final int RESPONSE_HEADER_BYTES = 2 + Fingerprint.LENGTH + 2 + 4;

    private static final System.Logger LOG = System.getLogger(RedisFastFilter.class.getName());
    /**
     * The scripts are read from the jar when their class initialises: here, on the thread that builds the
     * filter, never on an event loop by the first {@code clear} of {@link #async()}, where reading a file blocks.
     */
    private static final Script CLEAR = Script.FAST_FILTER_CLEAR;
    private static final Script LOOKUP_OR_MARK = Script.FAST_FILTER_LOOKUP_OR_MARK;
    private static final List<Script> SCRIPTS = Script.FAST_FILTER;

    private final String topology;
    private final String keyPrefix;
    private final byte[] keyPrefixBytes;
    private final String name;
    private final Duration timeout;
    private final Duration markerTtl;
    /** The marker's TTL as the look-up-or-mark script takes it: milliseconds, as ASCII digits. */
    private final byte[] markerTtlMillis;
    private final int failureThreshold;
    private final Duration openBackoff;
    private final Duration maxOpenBackoff;
    private final Listener listener;
    private final CircuitBreaker breaker;
    private final LazyConnection connection;
    private final AsyncFastPath async = new AsyncView();

    private RedisFastFilter(Builder b) {
        this.topology = b.topology;
        this.keyPrefix = b.keyPrefix == null ? DEFAULT_KEY_PREFIX : b.keyPrefix;
        this.keyPrefixBytes = keyPrefix.getBytes(US_ASCII);
        this.name = b.name == null ? DEFAULT_NAME : b.name;
        this.timeout = b.timeout == null ? DEFAULT_TIMEOUT : b.timeout;
        this.markerTtl = b.markerTtl == null ? DEFAULT_MARKER_TTL : b.markerTtl;
        this.markerTtlMillis = Long.toString(markerTtl.toMillis()).getBytes(US_ASCII);
        this.failureThreshold = b.failureThreshold == null ? DEFAULT_FAILURE_THRESHOLD : b.failureThreshold;
        this.openBackoff = b.openBackoff == null ? DEFAULT_OPEN_BACKOFF : b.openBackoff;
        this.maxOpenBackoff = b.maxOpenBackoff == null ? DEFAULT_MAX_OPEN_BACKOFF : b.maxOpenBackoff;
        this.listener = b.listener == null ? Listener.NONE : b.listener;
        LongSupplier ticker = b.ticker == null ? System::nanoTime : b.ticker;
        this.breaker = new CircuitBreaker(failureThreshold, Backoff.exponential(openBackoff, maxOpenBackoff), ticker,
                this::breakerChanged);
        // No cool-down after a failed attempt: the breaker decides when a call tries Redis again.
        this.connection = new LazyConnection("retrysafe-" + name + "-connect", "fast filter " + name + " is closed",
                b.connector, RedisFastFilter::initialise, timeout, Duration.ZERO, ticker,
                () -> LOG.log(Level.DEBUG, () -> "[" + name + "] connection to Redis lost, or it reached a replica; "
                        + "opening a new one"),
                () -> LOG.log(Level.DEBUG, () -> "[" + name + "] connected to Redis (" + topology + ")"));
    }

    /**
     * Loads the scripts on a new connection, before any call uses it (a restarted server knows none): a
     * {@code clear} sent without waiting must not need a second try, which could reach Redis after a
     * later lookup.
     */
    private static void initialise(Link fresh) {
        for (Script script : SCRIPTS) {
            fresh.commands().scriptLoad(script.source());
        }
    }

    /** A fast filter on a standalone Redis, or a Sentinel-managed one (the client's URI says which). */
    public static Builder builder(RedisClient client) {
        Require.notNull(client, "client");
        return new Builder(Link.to(client), "standalone");
    }

    /** A fast filter on a Redis Cluster. */
    public static Builder builder(RedisClusterClient client) {
        Require.notNull(client, "client");
        return new Builder(Link.to(client), "cluster");
    }

    @Override
    public String name() {
        return name;
    }

    public String keyPrefix() {
        return keyPrefix;
    }

    public Duration timeout() {
        return timeout;
    }

    public Duration markerTtl() {
        return markerTtl;
    }

    public int failureThreshold() {
        return failureThreshold;
    }

    public Duration openBackoff() {
        return openBackoff;
    }

    public Duration maxOpenBackoff() {
        return maxOpenBackoff;
    }

    /** The breaker's state now: {@code OPEN} and {@code HALF_OPEN} mean requests go to the store without Redis. */
    public BreakerState breakerState() {
        return breaker.state();
    }

    /** The Redis key of {@code key}'s entry, for an operator ({@code redis-cli GET …}, {@code PTTL …}). */
    public String redisKey(IdempotencyKey key) {
        return new String(redisKeyBytes(key), US_ASCII);
    }

    private byte[] redisKeyBytes(IdempotencyKey key) {
        return RedisKeys.recordKey(keyPrefixBytes, Require.notNull(key, "key"));
    }

    // ------------------------------------------------------------------------------------------
    // FastPath
    // ------------------------------------------------------------------------------------------

    /** One {@code GET}. */
    @Override
    public Optional<Cached> lookup(IdempotencyKey key, Fingerprint fingerprint) {
        Require.notNull(fingerprint, "fingerprint");
        byte[] redisKey = redisKeyBytes(key);
        byte[] value = call("lookup", l -> l.commands().get(redisKey), null);
        return value == null ? Optional.empty() : readEntry(key, value, fingerprint);
    }

    /** What the entry of {@code key} says to a request with {@code fingerprint}; a miss if it is not readable. */
    private Optional<Cached> readEntry(IdempotencyKey key, byte[] value, Fingerprint fingerprint) {
        try {
            return Optional.of(decode(value, fingerprint));
        } catch (IllegalArgumentException e) {
            // Not written by this version: a miss, so the store answers (and a publish replaces it).
            LOG.log(Level.WARNING, () -> "[" + name + "] key " + key.digest() + ": unreadable entry in Redis ("
                    + e.getMessage() + "); treated as a miss");
            return Optional.empty();
        }
    }

    /** {@code SET key marker NX PX markerTtl}. */
    @Override
    public boolean markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
        Require.notNull(fingerprint, "fingerprint");
        byte[] redisKey = redisKeyBytes(key);
        SetArgs args = SetArgs.Builder.nx().px(markerTtl.toMillis());
        return call("markInFlight", l -> "OK".equals(l.commands().set(redisKey, MARKER, args)), Boolean.TRUE);
    }

    /**
     * One script, one round trip: what the key holds, or, when it holds nothing, the marker
     * ({@code SET PX markerTtl}) set and empty returned. An entry this version cannot read is empty as
     * well, without a marker: the store decides, and its publish replaces the entry.
     */
    @Override
    public Optional<Cached> lookupOrMark(IdempotencyKey key, Fingerprint fingerprint) {
        Require.notNull(fingerprint, "fingerprint");
        byte[][] keys = {redisKeyBytes(key)};
        byte[] held = call("lookupOrMark", l -> this.<byte[]>eval(l, LOOKUP_OR_MARK, keys, MARKER, markerTtlMillis),
                null);
        return held == null ? Optional.empty() : readEntry(key, held, fingerprint);
    }

    /**
     * {@code SET key response PX ttl}: the response replaces the marker in one command. A
     * {@code ttl} under 1 ms publishes nothing.
     */
    @Override
    public void publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response, Duration ttl) {
        Require.notNull(fingerprint, "fingerprint");
        Require.notNull(response, "response");
        Require.notNull(ttl, "ttl");
        byte[] redisKey = redisKeyBytes(key);
        if (ttl.toMillis() < 1) {
            clear(key);
            return;
        }
        byte[] value = encode(fingerprint, response);
        SetArgs args = SetArgs.Builder.px(ttl.toMillis());
        call("publish", l -> l.commands().set(redisKey, value, args), null);
    }

    /** Deletes the key if it holds the marker (a short Lua script), never a cached response. */
    @Override
    public void clear(IdempotencyKey key) {
        byte[] redisKey = redisKeyBytes(key);
        byte[][] keys = {redisKey};
        call("clear", l -> this.<Long>eval(l, CLEAR, keys, MARKER), null);
    }

    /** Called by its SHA-1; loaded again when Redis answers {@code NOSCRIPT} (its scripts were flushed). */
    private <T> T eval(Link l, Script script, byte[][] keys, byte[]... args) {
        try {
            return l.commands().evalsha(script.sha(), script.output(), keys, args);
        } catch (RedisNoScriptException e) {
            l.commands().scriptLoad(script.source());
            return l.commands().evalsha(script.sha(), script.output(), keys, args);
        }
    }

    /**
     * {@code PING}, past the breaker, for a health check: the round trip's duration. Throws the
     * failure (a {@code RedisException}) when Redis does not answer within the timeout.
     */
    public Duration ping() {
        long start = System.nanoTime();
        link().commands().ping();
        return Duration.ofNanos(System.nanoTime() - start);
    }

    /** Closes the filter's connection (not the client, which stays the application's); idempotent. */
    @Override
    public void close() {
        connection.close();
    }

    /**
     * This filter for a non-blocking stack: the same entries, connection and breaker (a failure seen
     * through either face counts towards opening it, and while it is open neither goes to Redis), each
     * call answered by a stage that never blocks the caller and never fails for Redis. Closing this
     * filter closes both; the same instance every time. A command sent through it goes out on the
     * filter's one connection in the order of the calls, so a publish not waited for is in Redis before
     * any later lookup through either face reads the key.
     */
    @Override
    public AsyncFastPath async() {
        return async;
    }

    /** {@link #async()}: the commands of the blocking methods, through Lettuce's asynchronous API. */
    private final class AsyncView implements AsyncFastPath {
        @Override
        public CompletionStage<Optional<Cached>> lookup(IdempotencyKey key, Fingerprint fingerprint) {
            Require.notNull(fingerprint, "fingerprint");
            byte[] redisKey = redisKeyBytes(key);
            return callAsync("lookup", l -> l.async().get(redisKey), null)
                    .thenApply(value -> value == null ? Optional.empty() : readEntry(key, value, fingerprint));
        }

        @Override
        public CompletionStage<Boolean> markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
            Require.notNull(fingerprint, "fingerprint");
            byte[] redisKey = redisKeyBytes(key);
            SetArgs args = SetArgs.Builder.nx().px(markerTtl.toMillis());
            return callAsync("markInFlight", l -> l.async().set(redisKey, MARKER, args).thenApply("OK"::equals),
                    Boolean.TRUE);
        }

        @Override
        public CompletionStage<Optional<Cached>> lookupOrMark(IdempotencyKey key, Fingerprint fingerprint) {
            Require.notNull(fingerprint, "fingerprint");
            byte[][] keys = {redisKeyBytes(key)};
            return callAsync("lookupOrMark", l -> l.<byte[]>evalAsync(LOOKUP_OR_MARK, keys, MARKER, markerTtlMillis),
                    null).thenApply(held -> held == null ? Optional.empty() : readEntry(key, held, fingerprint));
        }

        @Override
        public CompletionStage<Void> publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response,
                Duration ttl) {
            Require.notNull(fingerprint, "fingerprint");
            Require.notNull(response, "response");
            Require.notNull(ttl, "ttl");
            if (ttl.toMillis() < 1) {
                return clear(key);
            }
            byte[] redisKey = redisKeyBytes(key);
            byte[] value = encode(fingerprint, response);
            SetArgs args = SetArgs.Builder.px(ttl.toMillis());
            return callAsync("publish", l -> l.async().set(redisKey, value, args), null).thenApply(ok -> null);
        }

        @Override
        public CompletionStage<Void> clear(IdempotencyKey key) {
            byte[][] keys = {redisKeyBytes(key)};
            return callAsync("clear", l -> l.<Long>evalAsync(CLEAR, keys, MARKER), null)
                    .thenApply(deleted -> null);
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String toString() {
            return RedisFastFilter.this + ".async()";
        }
    }

    // ------------------------------------------------------------------------------------------
    // Redis, behind the breaker
    // ------------------------------------------------------------------------------------------

    /** Runs one command if the breaker lets it through; any failure is reported and answered with {@code fallback}. */
    private <T> T call(String operation, Function<Link, T> command, T fallback) {
        if (!breaker.tryAcquire()) {
            return fallback;
        }
        T result;
        Link l = null;
        try {
            l = link();
            result = command.apply(l);
        } catch (RuntimeException e) {
            connection.failed(l, e);
            failed(operation, e);
            return fallback;
        } catch (Error e) {
            breaker.onFailure(null);
            throw e;
        }
        breaker.onSuccess();
        return result;
    }

    /** A call that failed: the breaker counts it, the listener hears it, the request goes on without Redis. */
    private void failed(String operation, RuntimeException e) {
        breaker.onFailure(e);
        LOG.log(Level.DEBUG, () -> "[" + name + "] " + operation + " failed: " + e);
        try {
            listener.onFailure(operation, e);
        } catch (RuntimeException thrown) {
            LOG.log(Level.WARNING, () -> "[" + name + "] listener " + listener.getClass().getName()
                    + ".onFailure threw; ignored", thrown);
        }
    }

    /**
     * {@link #call} without waiting: the breaker first, then the connection ({@link LazyConnection#getAsync()})
     * and the command, each bounded by the timeout (the command by Lettuce's own expiry). The stage
     * never fails for Redis: a failure or
     * timeout is counted, reported and answered with {@code fallback}, as the blocking call does.
     */
    private <T> CompletionStage<T> callAsync(String operation, Function<Link, CompletionStage<T>> command,
            T fallback) {
        if (!breaker.tryAcquire()) {
            return CompletableFuture.completedFuture(fallback);
        }
        CompletableFuture<T> answer;
        try {
            answer = connection.callAsync(command);
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        return answer.handle((result, e) -> {
            if (e == null) {
                breaker.onSuccess();
                return result;
            }
            Throwable cause = LazyConnection.unwrap(e);
            if (cause instanceof Error error) {
                breaker.onFailure(null);
                throw error;
            }
            failed(operation, cause instanceof NotConnected nc ? asRedisException(nc)
                    : cause instanceof RuntimeException re ? re : new RedisException(cause));
            return fallback;
        });
    }

    /**
     * The connection: opened on first use, and again when Lettuce reports it lost, without waiting
     * out Lettuce's own reconnection (why: {@link LazyConnection}); waited for at most the timeout,
     * so that a Redis that does not answer costs a request no more than a command would. Only calls
     * the breaker lets through (and {@link #ping()}) get here: while it is open, nothing tries to
     * connect. The exceptions are Lettuce's, which the breaker counts as failures.
     */
    private Link link() {
        try {
            return connection.get();
        } catch (NotConnected e) {
            throw asRedisException(e);
        }
    }

    /** Why there is no connection, as a failure the breaker counts. */
    private RuntimeException asRedisException(NotConnected e) {
        Throwable cause = e.getCause();
        return switch (e.reason()) {
            case STILL_CONNECTING -> new RedisCommandTimeoutException("not connected to Redis within "
                    + timeout.toMillis() + " ms; still connecting");
            case FAILED, COOLING_DOWN -> cause instanceof RuntimeException re ? re
                    : new RedisConnectionException("connecting to Redis failed: " + cause, cause);
            case INTERRUPTED -> new RedisConnectionException("interrupted while connecting to Redis", cause);
        };
    }

    private void breakerChanged(BreakerState from, BreakerState to, int failures, long backoffNanos,
            RuntimeException cause) {
        long backoffMillis = TimeUnit.NANOSECONDS.toMillis(backoffNanos);
        if (from == BreakerState.CLOSED && to == BreakerState.OPEN) {
            LOG.log(Level.WARNING, () -> "[" + name + "] " + failures + " consecutive Redis failures"
                    + (cause == null ? "" : " (last: " + cause.getMessage() + ")") + "; breaker open: requests go to "
                    + "the store without Redis, next probe in " + backoffMillis + " ms");
        } else if (to == BreakerState.OPEN) {
            LOG.log(Level.DEBUG, () -> "[" + name + "] probe failed" + (cause == null ? "" : ": " + cause.getMessage())
                    + "; breaker open for " + backoffMillis + " ms");
        } else if (to == BreakerState.CLOSED) {
            LOG.log(Level.INFO, () -> "[" + name + "] Redis answers again; breaker closed");
        } else {
            LOG.log(Level.DEBUG, () -> "[" + name + "] breaker half open: one probe goes to Redis");
        }
        try {
            listener.onStateChange(from, to);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, () -> "[" + name + "] listener " + listener.getClass().getName()
                    + ".onStateChange threw; ignored", e);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Values
    // ------------------------------------------------------------------------------------------

    /**
     * {@code 'R' 1 fingerprint(32) status(u16) headersLength(u32) headers body}; headers as
     * {@code name:value} lines ({@link HeaderCodec}), UTF-8; the body's bytes as they are.
     */
    static byte[] encode(Fingerprint fingerprint, StoredResponse response) {
        byte[] headers = HeaderCodec.encode(response.headers()).getBytes(UTF_8);
        byte[] body = response.body();
        ByteBuffer out = ByteBuffer.allocate(RESPONSE_HEADER_BYTES + headers.length + body.length);
        out.put(RESPONSE_TYPE).put(FORMAT_VERSION).put(fingerprint.bytes()).putShort((short) response.status())
                .putInt(headers.length).put(headers).put(body);
        return out.array();
    }

    /** What an entry says to a request with {@code fingerprint}; IllegalArgumentException if it is not one of ours. */
    static Cached decode(byte[] value, Fingerprint fingerprint) {
        if (value.length < 2 || value[1] != FORMAT_VERSION) {
            throw new IllegalArgumentException("not a fast filter entry of format " + FORMAT_VERSION + " ("
                    + value.length + " bytes)");
        }
        if (value[0] == MARKER_TYPE && value.length == MARKER.length) {
            return new Cached.InFlight();
        }
        if (value[0] != RESPONSE_TYPE || value.length < RESPONSE_HEADER_BYTES) {
            throw new IllegalArgumentException("unknown fast filter entry type 0x" + Integer.toHexString(value[0] & 0xff)
                    + " (" + value.length + " bytes)");
        }
        try {
            ByteBuffer in = ByteBuffer.wrap(value, 2, value.length - 2);
            byte[] cachedFingerprint = new byte[Fingerprint.LENGTH];
            in.get(cachedFingerprint);
            if (!MessageDigest.isEqual(cachedFingerprint, fingerprint.bytes())) {
                return new Cached.Mismatch();
            }
            int status = in.getShort() & 0xffff;
            int headersLength = in.getInt();
            if (headersLength < 0 || headersLength > in.remaining()) {
                throw new IllegalArgumentException("headers length " + headersLength + " exceeds the entry");
            }
            byte[] headers = new byte[headersLength];
            in.get(headers);
            byte[] body = Arrays.copyOfRange(value, in.position(), value.length);
            return new Cached.Replay(StoredResponse.of(status, HeaderCodec.decode(new String(headers, UTF_8)), body));
        } catch (BufferUnderflowException | IndexOutOfBoundsException e) {
            throw new IllegalArgumentException("truncated fast filter entry (" + value.length + " bytes)", e);
        }
    }

    @Override
    public String toString() {
        return "RedisFastFilter[name=" + name + ", topology=" + topology + ", keyPrefix=" + keyPrefix + ", timeout="
                + timeout + ", markerTtl=" + markerTtl + ", breaker=" + breakerState() + "]";
    }

    /** Builds a {@link RedisFastFilter}; each value may be set once. */
    public static final class Builder {
        private final Supplier<Link> connector;
        private final String topology;
        private String keyPrefix;
        private String name;
        private Duration timeout;
        private Duration markerTtl;
        private Integer failureThreshold;
        private Duration openBackoff;
        private Duration maxOpenBackoff;
        private Listener listener;
        private LongSupplier ticker;

        private Builder(Supplier<Link> connector, String topology) {
            this.connector = connector;
            this.topology = topology;
        }

        /**
         * What every Redis key of the filter starts with ({@value #DEFAULT_KEY_PREFIX} by default); the
         * rules of {@link RedisIdempotencyStore.Builder#keyPrefix}. Use a prefix other than the
         * store's if both share a Redis.
         */
        public Builder keyPrefix(String keyPrefix) {
            Require.unset(this.keyPrefix, "keyPrefix");
            this.keyPrefix = RedisKeys.checkPrefix(keyPrefix);
            return this;
        }

        /** The filter's name in logs and metrics ({@value #DEFAULT_NAME} by default). */
        public Builder name(String name) {
            Require.unset(this.name, "name");
            this.name = Require.notBlank(name, "name");
            return this;
        }

        /**
         * How long one call waits for Redis (100 ms by default) before it counts as a failure and
         * the request goes to the store; also the longest a request waits for the first connection.
         */
        public Builder timeout(Duration timeout) {
            Require.unset(this.timeout, "timeout");
            this.timeout = atLeastOneMilli(timeout, "timeout");
            return this;
        }

        /**
         * How long an in-flight marker lives when its holder never removes it (the holder died); 30 s
         * by default, the default lease. Make it at least as long as the slowest request: a marker
         * that expires first only lets a duplicate through to the store, which still decides.
         */
        public Builder markerTtl(Duration markerTtl) {
            Require.unset(this.markerTtl, "markerTtl");
            this.markerTtl = atLeastOneMilli(markerTtl, "markerTtl");
            return this;
        }

        /** Consecutive failures or timeouts that open the breaker (5 by default). */
        public Builder failureThreshold(int failureThreshold) {
            Require.unset(this.failureThreshold, "failureThreshold");
            this.failureThreshold = Require.between(failureThreshold, 1, 1_000_000, "failureThreshold");
            return this;
        }

        /** How long the breaker first stays open (1 s by default); each failed probe doubles it. */
        public Builder openBackoff(Duration openBackoff) {
            Require.unset(this.openBackoff, "openBackoff");
            this.openBackoff = atLeastOneMilli(openBackoff, "openBackoff");
            return this;
        }

        /** The longest the breaker stays open between probes (30 s by default). */
        public Builder maxOpenBackoff(Duration maxOpenBackoff) {
            Require.unset(this.maxOpenBackoff, "maxOpenBackoff");
            this.maxOpenBackoff = atLeastOneMilli(maxOpenBackoff, "maxOpenBackoff");
            return this;
        }

        /** Hears failures and changes of the breaker's state. */
        public Builder listener(Listener listener) {
            Require.unset(this.listener, "listener");
            this.listener = Require.notNull(listener, "listener");
            return this;
        }

        /** The breaker's time source in nanoseconds ({@code System::nanoTime} by default); for tests. */
        public Builder ticker(LongSupplier ticker) {
            Require.unset(this.ticker, "ticker");
            this.ticker = Require.notNull(ticker, "ticker");
            return this;
        }

        public RedisFastFilter build() {
            Duration first = openBackoff == null ? DEFAULT_OPEN_BACKOFF : openBackoff;
            Duration max = maxOpenBackoff == null ? DEFAULT_MAX_OPEN_BACKOFF : maxOpenBackoff;
            if (first.compareTo(max) > 0) {
                throw new IllegalStateException("openBackoff must not exceed maxOpenBackoff, but was " + first + " > "
                        + max);
            }
            return new RedisFastFilter(this);
        }

        private static Duration atLeastOneMilli(Duration d, String what) {
            Require.positive(d, what);
            if (d.toMillis() < 1) {
                throw new IllegalArgumentException(what + " must be at least 1 ms (Redis counts milliseconds), but was "
                        + d);
            }
            return d;
        }
    }
}
