package io.retrysafe.redis;

import static java.nio.charset.StandardCharsets.US_ASCII;

import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisBusyException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisLoadingException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisReadOnlyException;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import io.retrysafe.redis.LazyConnection.Link;
import io.retrysafe.redis.LazyConnection.NotConnected;
import io.retrysafe.redis.internal.Script;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.LongSupplier;
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
 * run the operation. Only a Redis that could not answer is {@linkplain StoreUnavailableException#isUnreachable()
 * unreachable}, the one failure fail-open runs through; an error Redis answered with (a record the
 * scripts cannot read, {@code OOM}) and a record this store cannot decode are refused either way.
 *
 * <p>Redis replicates asynchronously: a master that fails over may lose the writes it acknowledged last, and a
 * claim or a completion lost that way lets a retry run the operation again. {@link Builder#waitForReplicas} makes
 * each claim and completion wait until replicas have it (docs/redis.md, "Failover").
 */
public final class RedisIdempotencyStore implements IdempotencyStore, AutoCloseable {
    public static final String DEFAULT_KEY_PREFIX = "retrysafe:";
    public static final String DEFAULT_NAME = "redis";
    /** Bound on every command of the store's connection; replaces the client's (Lettuce's default is 60 s). */
    public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(2);

    static final int MAX_KEY_PREFIX_LENGTH = RedisKeys.MAX_PREFIX_LENGTH;
    private static final Duration RETRY_AFTER = Duration.ofSeconds(1);
    private static final System.Logger LOG = System.getLogger(RedisIdempotencyStore.class.getName());
    /**
     * The scripts are read from the jar when their class initialises: here, on the thread that builds the
     * store, never by the first call of {@link #async()}, which may be made on an event loop, where
     * reading a file blocks.
     */
    private static final List<Script> SCRIPTS = Script.STORE;
    /** The record's fields an acknowledgement reads back ({@code claim.lua} and {@code complete.lua} write them). */
    private static final byte[] STATUS_FIELD = "status".getBytes(US_ASCII);
    private static final byte[] TOKEN_FIELD = "token".getBytes(US_ASCII);

    private final String topology;
    private final String keyPrefix;
    private final byte[] keyPrefixBytes;
    private final String name;
    private final Duration commandTimeout;
    private final LazyConnection connection;
    /** Replicas that must acknowledge a claim or a completion before it counts; 0: none waited for. */
    private final int replicas;
    private final Duration replicaTimeout;
    private final LongAdder unacknowledgedCompletions = new LongAdder();
    private final AsyncIdempotencyStore async = new AsyncView();

    private RedisIdempotencyStore(Builder b) {
        this.topology = b.topology;
        this.keyPrefix = b.keyPrefix == null ? DEFAULT_KEY_PREFIX : b.keyPrefix;
        this.keyPrefixBytes = keyPrefix.getBytes(US_ASCII);
        this.name = b.name == null ? DEFAULT_NAME : b.name;
        this.commandTimeout = b.commandTimeout == null ? DEFAULT_COMMAND_TIMEOUT : b.commandTimeout;
        this.replicas = b.replicas;
        this.replicaTimeout = b.replicaTimeout;
        this.connection = new LazyConnection("retrysafe-" + name + "-connect",
                "idempotency store " + name + " is closed", b.connector, this::initialise, commandTimeout, RETRY_AFTER,
                b.ticker == null ? System::nanoTime : b.ticker,
                () -> LOG.log(Level.INFO, () -> "[" + name + "] connection to Redis lost, or it reached a replica; "
                        + "opening a new one"),
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

    /** How many replicas must acknowledge each claim and completion ({@link Builder#waitForReplicas}); 0 if none. */
    public int replicasToWaitFor() {
        return replicas;
    }

    /**
     * Completions stored on the master that fewer replicas than {@link #replicasToWaitFor()} acknowledged in time:
     * each was answered all the same (the operation had run), and a failover before its replicas caught up would
     * lose it. Always 0 without {@link Builder#waitForReplicas}.
     */
    public long unacknowledgedCompletions() {
        return unacknowledgedCompletions.sum();
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
        byte[] recordKey = recordKey(request.key());
        Link l = link("claim");
        List<Object> answer = run(l, Script.CLAIM, "claim", recordKey, RedisRecords.claimArgs(request));
        ClaimResult result = decoded("claim", recordKey, () -> RedisRecords.claimResult(answer, request, name));
        if (result instanceof ClaimResult.Claimed claimed && replicas > 0
                && !await(acknowledged(l, recordKey, claimed.token(), false))) {
            try {
                release(request.key(), claimed.token());
            } catch (StoreUnavailableException e) {
                LOG.log(Level.DEBUG, () -> "[" + name + "] releasing an unacknowledged claim failed; it frees when "
                        + "its lease ends: " + e.getMessage());
            }
            throw unacknowledgedClaim(recordKey);
        }
        return result;
    }

    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        byte[] recordKey = recordKey(key);
        Link l = link("complete");
        FencedWrite write = RedisRecords.fencedWrite(run(l, Script.COMPLETE, "complete", recordKey,
                RedisRecords.completeArgs(token, response, retention)));
        if (write instanceof FencedWrite.Committed && replicas > 0
                && !await(acknowledged(l, recordKey, token, true))) {
            unacknowledgedCompletion(recordKey);
        }
        return write;
    }

    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        return RedisRecords.fencedWrite(run(Script.RELEASE, "release", recordKey(key), RedisRecords.releaseArgs(token)));
    }

    @Override
    public boolean canRenewLease() {
        return true;
    }

    @Override
    public FencedWrite renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        return RedisRecords.fencedWrite(run(Script.RENEW, "renew lease", recordKey(key),
                RedisRecords.renewArgs(token, leaseTtl)));
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        Link l = link("inspect");
        byte[] recordKey = recordKey(key);
        Map<byte[], byte[]> raw;
        try {
            raw = l.commands().hgetall(recordKey);
        } catch (RedisException e) {
            connection.failed(l, e);
            throw failure("inspect", recordKey, e);
        }
        return decoded("inspect", recordKey, () -> RedisRecords.record(key, raw));
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

    /**
     * This store on the non-blocking SPI, for a reactive stack ({@code AsyncRetrySafe}): the same
     * records, scripts and connection, each call answered by a stage that completes on Lettuce's event
     * loop and never blocks the caller (no call waits for a connect or a command). Rows written through
     * either face are read through the other. Closing this store closes both; the same instance every
     * time.
     */
    public AsyncIdempotencyStore async() {
        return async;
    }

    /**
     * Opens the store's connection and loads its scripts now, waiting up to {@code wait}: whether the store is ready.
     * Call it as the service starts (the starter and the gateway do), so that its first requests do not wait for it:
     * discovering a Redis Cluster's topology and loading the scripts on every node takes about a second, longer under
     * load, and a request that waits past {@link #commandTimeout()} is refused as store-unavailable (or, with
     * fail-open, runs unprotected). False leaves the store as it was: the next call tries again.
     */
    public boolean connect(Duration wait) {
        Require.notNull(wait, "wait");
        return connection.connect(wait);
    }

    /** Whether the store's connection is open with its scripts loaded; opens none. */
    public boolean isConnected() {
        return connection.isReady();
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
        return run(link(operation), script, operation, recordKey, args);
    }

    private <T> T run(Link l, Script script, String operation, byte[] recordKey, byte[]... args) {
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
            connection.failed(l, e);
            throw failure(operation, recordKey, e);
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
            throw notConnected(operation, e);
        }
    }

    /** Why there is no connection, as the caller of {@code operation} sees it. */
    private RuntimeException notConnected(String operation, NotConnected e) {
        Throwable cause = e.getCause();
        return switch (e.reason()) {
            case COOLING_DOWN -> unavailable(operation, cause instanceof RedisReadOnlyException
                    ? "not connected to Redis; the last connection, less than " + RETRY_AFTER.toMillis() + " ms ago, "
                            + "reached a replica: " + cause.getMessage()
                    : "not connected to Redis; the last attempt to connect, less than " + RETRY_AFTER.toMillis()
                            + " ms ago, failed: " + cause.getMessage(), cause);
            case STILL_CONNECTING -> unavailable(operation, "not connected to Redis within "
                    + commandTimeout.toMillis() + " ms (commandTimeout); still connecting", cause);
            case FAILED -> cause instanceof RedisException re
                    ? unavailable(operation, "connecting to Redis failed: " + re.getMessage(), re)
                    : new IllegalStateException("connecting to Redis failed: " + cause, cause);
            case INTERRUPTED -> new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name
                    + " failed to " + operation + ": interrupted while connecting to Redis", cause);
        };
    }

    /** Readies a new connection, before any call uses it: loads the scripts (a restarted server knows none). */
    private void initialise(Link fresh) {
        for (Script script : SCRIPTS) {
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

    private StoreUnavailableException failure(String operation, byte[] recordKey, RedisException e) {
        if (isUnreachable(e)) {
            return unavailable(operation, e.getMessage(), e);
        }
        return refused(operation, "Redis answered with an error on " + new String(recordKey, US_ASCII) + ": "
                + e.getMessage(), e);
    }

    /**
     * Whether Redis could not answer, as opposed to answering with an error: a script's error on a
     * record it cannot read ({@code WRONGTYPE}, a field that is not a number), {@code OOM} when it is
     * full. A server loading its data, busy with a script, or without a writable master (read-only
     * after a failover, cluster or master down) cannot answer for now, as a server not accepting
     * connections yet.
     */
    static boolean isUnreachable(RedisException e) {
        if (!(e instanceof RedisCommandExecutionException)) {
            return true; // no connection, a lost one, a timeout
        }
        if (e instanceof RedisLoadingException || e instanceof RedisBusyException
                || e instanceof RedisReadOnlyException) {
            return true;
        }
        String error = e.getMessage() == null ? "" : e.getMessage();
        return error.startsWith("MASTERDOWN") || error.startsWith("CLUSTERDOWN") || error.startsWith("TRYAGAIN");
    }

    /**
     * What Redis answered about a record, decoded; a record this store cannot decode (written by
     * something else, or altered) is refused and reported with its Redis key, never taken as absent.
     */
    private <T> T decoded(String operation, byte[] recordKey, Supplier<T> decode) {
        try {
            return decode.get();
        } catch (RuntimeException e) {
            throw refused(operation, "cannot read the record at " + new String(recordKey, US_ASCII) + ": " + e, e);
        }
    }

    private StoreUnavailableException unavailable(String operation, String what, Throwable cause) {
        return new StoreUnavailableException(name, RETRY_AFTER, message(operation, what), cause);
    }

    /** Redis was reached and the call failed all the same: never run unprotected, also when failing open. */
    private StoreUnavailableException refused(String operation, String what, Throwable cause) {
        return new StoreUnavailableException(name, RETRY_AFTER, message(operation, what), cause, false);
    }

    private String message(String operation, String what) {
        return "idempotency store " + name + " failed to " + operation + " (Redis " + topology + ", keyPrefix "
                + keyPrefix + "): " + what;
    }

    // ------------------------------------------------------------------------------------------
    // Replicas
    // ------------------------------------------------------------------------------------------

    /**
     * Whether {@link #replicas} replicas acknowledged this connection's writes within {@link #replicaTimeout}
     * ({@code WAIT}), and the record still says what was written: {@code token} holds it, completed or in progress.
     * The read goes with the {@code WAIT}, in one round trip (Redis answers it once the {@code WAIT} returns). It
     * guards against a connection that Lettuce re-established in between, maybe to a promoted replica: a
     * {@code WAIT} there counts no write of ours and would confirm at once. Never fails: a failure is no
     * acknowledgement.
     */
    private CompletableFuture<Boolean> acknowledged(Link l, byte[] recordKey, OwnerToken token, boolean completed) {
        try {
            CompletableFuture<Long> acked = l.async().waitForReplication(replicas, replicaTimeout.toMillis())
                    .toCompletableFuture();
            CompletableFuture<List<KeyValue<byte[], byte[]>>> record = l.async()
                    .hmget(recordKey, STATUS_FIELD, TOKEN_FIELD).toCompletableFuture();
            return acked.thenCombine(record, (n, fields) -> n >= replicas && holds(fields, token, completed))
                    .exceptionally(e -> false);
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(false);
        }
    }

    private static boolean holds(List<KeyValue<byte[], byte[]>> fields, OwnerToken token, boolean completed) {
        return fields.size() == 2 && fields.get(0).hasValue() && fields.get(1).hasValue()
                && new String(fields.get(0).getValue(), US_ASCII).equals(completed ? "COMPLETED" : "IN_PROGRESS")
                && new String(fields.get(1).getValue(), US_ASCII).equals(token.toString());
    }

    /** {@code acknowledged} on the blocking path: Lettuce's command timeout bounds it; interrupted is false. */
    private boolean await(CompletableFuture<Boolean> acknowledged) {
        try {
            return acknowledged.get(replicaTimeout.plus(commandTimeout).toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException | TimeoutException e) {
            return false;
        }
    }

    /**
     * A claim the replicas did not acknowledge is not run: a failover could lose it, and a retry on the promoted
     * replica would run the operation beside this one. Refused (Redis answered), so fail-open never runs it either.
     */
    private StoreUnavailableException unacknowledgedClaim(byte[] recordKey) {
        return refused("claim", "fewer than " + replicas + " replica(s) acknowledged the claim of "
                + new String(recordKey, US_ASCII) + " within " + replicaTimeout.toMillis() + " ms (waitForReplicas); "
                + "the operation was not run", null);
    }

    /**
     * A completion the replicas did not acknowledge still answers: the operation ran, and a 503 would only bring
     * the retry that a lost completion cannot stop. Counted and logged, for the operator.
     */
    private void unacknowledgedCompletion(byte[] recordKey) {
        unacknowledgedCompletions.increment();
        LOG.log(Level.WARNING, () -> "[" + name + "] fewer than " + replicas + " replica(s) acknowledged the "
                + "completion of " + new String(recordKey, US_ASCII) + " within " + replicaTimeout.toMillis()
                + " ms; answered all the same, but a failover before the replicas catch up would lose it");
    }

    // ------------------------------------------------------------------------------------------
    // The non-blocking SPI
    // ------------------------------------------------------------------------------------------

    /**
     * {@link #run} without waiting: the connection as {@link LazyConnection#getAsync()} gives it (a
     * connect runs on its own thread), the script by {@link Link#evalAsync}; every failure fails the
     * stage as the blocking call would throw it.
     */
    private <T> CompletableFuture<T> runAsync(Script script, String operation, byte[] recordKey, byte[][] args) {
        byte[][] keys = {recordKey};
        return onConnection(operation, recordKey, l -> l.evalAsync(script, keys, args));
    }

    /** {@code command} on {@code recordKey}; its failure as the blocking store would throw it. */
    private <T> CompletableFuture<T> onConnection(String operation, byte[] recordKey,
            Function<Link, CompletableFuture<T>> command) {
        return connection.callAsync(command).exceptionallyCompose(e -> {
            Throwable cause = LazyConnection.unwrap(e);
            if (cause instanceof NotConnected nc) {
                return CompletableFuture.failedFuture(notConnected(operation, nc));
            }
            if (cause instanceof RedisException re) {
                return CompletableFuture.failedFuture(failure(operation, recordKey, re));
            }
            return CompletableFuture.failedFuture(cause);
        });
    }

    /** A call whose arguments are checked first: a bad one fails the stage instead of throwing. */
    private static <T> CompletionStage<T> checked(Supplier<CompletionStage<T>> call) {
        try {
            return call.get();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** {@link #async()}: the same calls, each a stage. */
    private final class AsyncView implements AsyncIdempotencyStore {
        @Override
        public CompletionStage<ClaimResult> tryClaim(ClaimRequest request) {
            return checked(() -> {
                byte[] recordKey = recordKey(request.key());
                byte[][] keys = {recordKey};
                byte[][] args = RedisRecords.claimArgs(request);
                return onConnection("claim", recordKey, l -> l.<List<Object>>evalAsync(Script.CLAIM, keys, args)
                        .thenApply(answer -> decoded("claim", recordKey,
                                () -> RedisRecords.claimResult(answer, request, name)))
                        .thenCompose(result -> result instanceof ClaimResult.Claimed claimed && replicas > 0
                                ? acknowledged(l, recordKey, claimed.token(), false).thenCompose(ok -> ok
                                        ? CompletableFuture.completedFuture(result)
                                        : release(request.key(), claimed.token()).toCompletableFuture()
                                                .handle((released, e) -> null)
                                                .thenCompose(x -> CompletableFuture.failedFuture(
                                                        unacknowledgedClaim(recordKey))))
                                : CompletableFuture.completedFuture(result)));
            });
        }

        @Override
        public CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
                Duration retention) {
            return checked(() -> {
                byte[] recordKey = recordKey(key);
                byte[][] keys = {recordKey};
                byte[][] args = RedisRecords.completeArgs(token, response, retention);
                return onConnection("complete", recordKey, l -> l.<Long>evalAsync(Script.COMPLETE, keys, args)
                        .thenApply(RedisRecords::fencedWrite)
                        .thenCompose(write -> write instanceof FencedWrite.Committed && replicas > 0
                                ? acknowledged(l, recordKey, token, true).thenApply(ok -> {
                                    if (!ok) {
                                        unacknowledgedCompletion(recordKey);
                                    }
                                    return write;
                                })
                                : CompletableFuture.completedFuture(write)));
            });
        }

        @Override
        public CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token) {
            return checked(() -> RedisIdempotencyStore.this.<Long>runAsync(Script.RELEASE, "release",
                    recordKey(key), RedisRecords.releaseArgs(token)).thenApply(RedisRecords::fencedWrite));
        }

        @Override
        public boolean canRenewLease() {
            return true;
        }

        @Override
        public CompletionStage<FencedWrite> renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
            return checked(() -> RedisIdempotencyStore.this.<Long>runAsync(Script.RENEW, "renew lease",
                    recordKey(key), RedisRecords.renewArgs(token, leaseTtl)).thenApply(RedisRecords::fencedWrite));
        }

        @Override
        public CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key) {
            return checked(() -> {
                byte[] recordKey = recordKey(key);
                return onConnection("inspect", recordKey, l -> l.async().hgetall(recordKey).toCompletableFuture())
                        .thenApply(raw -> decoded("inspect", recordKey, () -> RedisRecords.record(key, raw)));
            });
        }

        /** Nothing to purge, as {@link RedisIdempotencyStore#purgeExpired}: Redis deletes every expired record. */
        @Override
        public CompletionStage<Integer> purgeExpired(int limit) {
            return checked(() -> CompletableFuture.completedFuture(RedisIdempotencyStore.this.purgeExpired(limit)));
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String toString() {
            return RedisIdempotencyStore.this + ".async()";
        }
    }

    @Override
    public String toString() {
        return "RedisIdempotencyStore[name=" + name + ", topology=" + topology + ", keyPrefix=" + keyPrefix
                + ", commandTimeout=" + commandTimeout + (replicas > 0 ? ", waitForReplicas=" + replicas + " within "
                + replicaTimeout : "") + "]";
    }

    /** Builds a {@link RedisIdempotencyStore}; each value may be set once. */
    public static final class Builder {
        private final Supplier<Link> connector;
        private final String topology;
        private String keyPrefix;
        private String name;
        private Duration commandTimeout;
        private LongSupplier ticker;
        private int replicas;
        private Duration replicaTimeout;

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

        /**
         * The time source, in nanoseconds ({@code System::nanoTime} by default), of the second after a failed
         * attempt to connect during which calls fail at once instead of trying again; for tests.
         */
        public Builder ticker(LongSupplier ticker) {
            Require.unset(this.ticker, "ticker");
            this.ticker = Require.notNull(ticker, "ticker");
            return this;
        }

        /**
         * Waits, after each claim and each completion, until {@code replicas} replicas have it ({@code WAIT}), at
         * most {@code timeout}; off by default. A claim they do not acknowledge in time is released and refused
         * ({@code 503}, never run, also with fail-open): a failover could lose it and let a retry run beside it. A
         * completion they do not acknowledge still answers (the operation ran) and is counted in
         * {@link #unacknowledgedCompletions()}. With every replica acknowledging, the replica a Sentinel promotes
         * has every claim that ran and every completion that answered; with fewer, the one promoted may not. Each
         * wait holds the store's one connection for a replica's round trip, and with fewer replicas up than
         * {@code replicas} every claim is refused: run one replica more than you wait for. A standalone or
         * Sentinel-managed Redis only: on a Cluster, refused when the store is built. {@code timeout} must be shorter
         * than the command timeout.
         */
        public Builder waitForReplicas(int replicas, Duration timeout) {
            Require.unset(this.replicaTimeout, "waitForReplicas");
            this.replicas = Require.between(replicas, 1, 16, "replicas");
            this.replicaTimeout = Require.atLeastOneMilli(timeout, "timeout");
            return this;
        }

        public RedisIdempotencyStore build() {
            if (replicas > 0 && topology.equals("cluster")) {
                throw new IllegalStateException("waitForReplicas is for a standalone or Sentinel-managed Redis: on a "
                        + "Redis Cluster a WAIT reaches one node, not the one that holds the record");
            }
            Duration timeout = commandTimeout == null ? DEFAULT_COMMAND_TIMEOUT : commandTimeout;
            if (replicas > 0 && replicaTimeout.compareTo(timeout) >= 0) {
                throw new IllegalStateException("waitForReplicas timeout (" + replicaTimeout + ") must be shorter than "
                        + "the command timeout (" + timeout + "), which bounds the WAIT command too");
            }
            return new RedisIdempotencyStore(this);
        }
    }
}
