package io.retrysafe.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.RedisReadOnlyException;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.netty.util.Timeout;
import io.netty.util.Timer;
import io.retrysafe.redis.internal.Script;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The one Redis connection of a store or fast filter: opened on first use, and opened anew when
 * Lettuce reports it lost. The client stays the application's; {@link #close()} closes only the
 * connection.
 *
 * <p>A connection is opened on a daemon thread of its own, and {@link #get()} waits for it at most
 * {@code wait}, so that a Redis that does not answer costs a call no more than a command would; an
 * attempt that takes longer goes on in the background, and every call meanwhile shares it. The
 * attempt connects, makes {@code wait} the connection's command timeout (replacing the client's;
 * Lettuce's default is 60 s) and runs the initialiser (the store loads its scripts there), so a
 * connection is ready before any call sees it. With a cool-down, a failed attempt is not repeated
 * for that long and calls in between fail at once; without one, the next call tries again (the fast
 * filter's breaker already keeps calls off a Redis that fails).
 *
 * <p>A connection that lost Redis ({@code isOpen()} is false) is closed and replaced rather than left
 * to Lettuce's own reconnection: after a long outage that waits up to 30 s between attempts (its
 * default reconnect delay doubles up to 30 s) and rejects, or queues until they time out, every
 * command meanwhile. The store would answer 503 for that long after Redis is back, and the fast
 * filter's probes would fail without trying Redis while its breaker's backoff doubled. Closing the
 * lost connection ends Lettuce's reconnection of it and fails the commands Lettuce still holds for
 * it, instead of sending them later, when their callers have long had their answer.
 */
final class LazyConnection {
    /**
     * A connection with its synchronous commands and its asynchronous ones (which never block the
     * caller: their futures complete on Lettuce's event loop); one of either topology.
     */
    record Link(StatefulConnection<byte[], byte[]> connection, RedisClusterCommands<byte[], byte[]> commands,
            RedisClusterAsyncCommands<byte[], byte[]> async, Timer expiry) {
        /** Connects to a standalone Redis, or a Sentinel-managed one: the client's URI says which. */
        static Supplier<Link> to(RedisClient client) {
            return () -> {
                StatefulRedisConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
                return new Link(c, c.sync(), c.async(), null);
            };
        }

        /**
         * Connects to a Redis Cluster, whose topology Lettuce learns from the client's seed URIs. Lettuce routes each
         * command to a node's connection, whose command expiry keeps the client's timeout (60 s by default) whatever
         * the cluster connection's is: {@link #callAsync} bounds the asynchronous commands itself, on the client's
         * timer ({@code expiry}).
         */
        static Supplier<Link> to(RedisClusterClient client) {
            return () -> {
                StatefulRedisClusterConnection<byte[], byte[]> c = client.connect(ByteArrayCodec.INSTANCE);
                return new Link(c, c.sync(), c.async(), client.getResources().timer());
            };
        }

        /**
         * {@code EVALSHA} without waiting: the future completes on the event loop. A server that
         * answers {@code NOSCRIPT} gets the script ({@code SCRIPT LOAD}) and the call once more; nothing
         * ran on the first call, so repeating it is safe. Each command is bounded by the connection's
         * timeout through Lettuce's own command expiry ({@code TimeoutOptions}, on by default), which
         * runs on Netty's timer: a JDK timer here ({@code orTimeout}) takes a queue lock on the event
         * loop to cancel its task, and under many calls in flight that lock is contended.
         */
        <T> CompletableFuture<T> evalAsync(Script script, byte[][] keys, byte[]... args) {
            return async.<T>evalsha(script.sha(), script.output(), keys, args).toCompletableFuture()
                    .exceptionallyCompose(e -> unwrap(e) instanceof RedisNoScriptException
                            ? async.scriptLoad(script.source()).thenCompose(sha ->
                                    async.<T>evalsha(script.sha(), script.output(), keys, args)).toCompletableFuture()
                            : CompletableFuture.failedFuture(unwrap(e)));
        }
    }

    /** The failure inside a {@link CompletionException} (how a dependent stage sees it), or {@code e} itself. */
    static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** Why {@link #get()} has no connection to give; each caller turns it into its own exception. */
    static final class NotConnected extends Exception {
        private static final long serialVersionUID = 1L;

        enum Reason {
            /** The last attempt failed less than the cool-down ago; the cause is its failure. */
            COOLING_DOWN,
            /** An attempt is under way and did not finish within the wait; the cause is the TimeoutException. */
            STILL_CONNECTING,
            /** The attempt failed; the cause is a RedisException, or an Error. */
            FAILED,
            /** The caller was interrupted while waiting (its flag is set again); the cause says so. */
            INTERRUPTED
        }

        private final Reason reason;

        NotConnected(Reason reason, Throwable cause) {
            super(reason.name(), cause, false, false); // an answer, not a bug: no stack trace of its own
            this.reason = reason;
        }

        Reason reason() {
            return reason;
        }
    }

    private final String threadName;
    private final String closedMessage;
    private final Supplier<Link> connector;
    private final Consumer<Link> initialiser;
    private final Duration wait;
    private final long coolDownNanos;
    private final LongSupplier ticker;
    private final Runnable onLost;
    private final Runnable onConnected;

    private final Object lock = new Object();
    private volatile Link link;
    // Guarded by lock.
    private boolean closed;
    private CompletableFuture<Link> connecting; // the attempt under way; only it sets this back to null
    private long lastFailureNanos;
    private RuntimeException lastFailure;

    /**
     * @param threadName    the name of the thread each attempt runs on
     * @param closedMessage what {@link #get()} says, as an IllegalStateException, once closed
     * @param connector     opens a connection (on the attempt's thread)
     * @param initialiser   readies a new connection before it is used (on the attempt's thread); what it
     *                      throws fails the attempt
     * @param wait          how long a call waits for a connection; also the connection's command timeout
     * @param coolDown      how long after a failed attempt calls fail at once instead of trying again;
     *                      {@link Duration#ZERO} for none
     * @param ticker        the cool-down's time source, in nanoseconds ({@code System::nanoTime})
     * @param onLost        told (under the lock) that a lost connection is being replaced
     * @param onConnected   told that a new connection is ready
     */
    LazyConnection(String threadName, String closedMessage, Supplier<Link> connector, Consumer<Link> initialiser,
            Duration wait, Duration coolDown, LongSupplier ticker, Runnable onLost, Runnable onConnected) {
        this.threadName = threadName;
        this.closedMessage = closedMessage;
        this.connector = connector;
        this.initialiser = initialiser;
        this.wait = wait;
        this.coolDownNanos = coolDown.toNanos();
        this.ticker = ticker;
        this.onLost = onLost;
        this.onConnected = onConnected;
    }

    /**
     * The connection, opened first if there is none or it was lost.
     *
     * @throws NotConnected          if there is no connection within the wait, or the cool-down is not over
     * @throws IllegalStateException once closed
     * @throws RuntimeException      what the connector or initialiser threw, if it was not a RedisException
     */
    Link get() throws NotConnected {
        CompletableFuture<Link> attempt = attempt();
        try {
            return attempt.get(wait.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new NotConnected(NotConnected.Reason.STILL_CONNECTING, e);
        } catch (ExecutionException e) {
            throw failed(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new NotConnected(NotConnected.Reason.INTERRUPTED, e);
        }
    }

    /**
     * {@link #get()} without blocking the caller: the future holds the connection, or fails with what
     * {@link #get()} throws ({@link NotConnected} past the wait or while cooling down,
     * IllegalStateException once closed). An attempt to connect runs on its own thread, as for
     * {@link #get()}, so no caller's thread (an event loop) ever waits for a connect.
     */
    CompletableFuture<Link> getAsync() {
        CompletableFuture<Link> attempt;
        try {
            attempt = attempt();
        } catch (NotConnected | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (attempt.isDone() && !attempt.isCompletedExceptionally()) {
            return attempt;
        }
        // A copy: the timeout ends this caller's wait, not the attempt every caller shares.
        return attempt.copy().orTimeout(wait.toNanos(), TimeUnit.NANOSECONDS).exceptionallyCompose(e -> {
            Throwable cause = unwrap(e);
            return CompletableFuture.failedFuture(cause instanceof TimeoutException
                    ? new NotConnected(NotConnected.Reason.STILL_CONNECTING, cause)
                    : failed(cause));
        });
    }

    /**
     * A command without blocking, on the connection {@link #getAsync()} gives; a failure of it is reported to
     * {@link #failed(Link, Throwable)}. Each command fails with a {@link RedisCommandTimeoutException} once it has
     * waited {@code wait}: on a standalone connection Lettuce's own command expiry sees to it (the attempt made
     * {@code wait} the connection's timeout), on a cluster the link's timer does.
     */
    <T> CompletableFuture<T> callAsync(Function<Link, ? extends CompletionStage<T>> command) {
        return getAsync().thenCompose(l -> bounded(l, command.apply(l).toCompletableFuture())
                .whenComplete((done, e) -> {
                    if (e != null) {
                        failed(l, e);
                    }
                }));
    }

    private <T> CompletableFuture<T> bounded(Link link, CompletableFuture<T> call) {
        if (link.expiry() == null || call.isDone()) {
            return call;
        }
        // Netty's wheel timer: a timeout is queued and cancelled without a lock (unlike a JDK timer's).
        Timeout expiry = link.expiry().newTimeout(t -> call.completeExceptionally(new RedisCommandTimeoutException(
                "Command timed out after " + wait.toMillis() + " ms")), wait.toNanos(), TimeUnit.NANOSECONDS);
        call.whenComplete((done, e) -> expiry.cancel());
        return call;
    }

    /**
     * Opens the connection now if there is none, and waits up to {@code bound} for it (a service's start-up, so that
     * its first calls find it ready): whether it is ready. A failed attempt answers false, as one still under way
     * past the bound does (it goes on in the background); so does one refused for the cool-down.
     */
    boolean connect(Duration bound) {
        try {
            attempt().get(bound.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (NotConnected | TimeoutException | ExecutionException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Whether a connection is open and ready (initialised), without opening one. */
    boolean isReady() {
        Link l = link;
        return l != null && l.connection().isOpen();
    }

    /** The open connection as a done future, or the attempt under way (started here if there is none). */
    private CompletableFuture<Link> attempt() throws NotConnected {
        Link l = link;
        if (l != null && l.connection().isOpen()) {
            return CompletableFuture.completedFuture(l);
        }
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException(closedMessage);
            }
            if (link != null) {
                if (link.connection().isOpen()) {
                    return CompletableFuture.completedFuture(link);
                }
                Link lost = link;
                link = null;
                lost.connection().closeAsync();
                onLost.run();
            }
            if (connecting == null) {
                if (lastFailure != null && ticker.getAsLong() - lastFailureNanos < coolDownNanos) {
                    throw new NotConnected(NotConnected.Reason.COOLING_DOWN, lastFailure);
                }
                CompletableFuture<Link> started = new CompletableFuture<>();
                connecting = started;
                Thread connect = new Thread(() -> connect(started), threadName);
                connect.setDaemon(true);
                connect.start();
            }
            return connecting;
        }
    }

    /**
     * A call on {@code used} failed with {@code failure}. A {@code READONLY} answer means the connection
     * reached a replica, which stays one for as long as the connection lives: Lettuce keeps a connection
     * that answers, and a Sentinel that demotes a master without it (a switch-over by hand, or a client
     * that connected to the address the Sentinels named a moment before a failover) leaves it there. Such
     * a connection is replaced as a lost one is, so that the next call asks the Sentinels anew for the
     * master. It counts as a failed attempt: with a cool-down, the next one waits for it, so a Redis that
     * is a replica under every address (a standalone URI to one) costs a reconnect per cool-down, not per
     * call. Any other failure leaves the connection as it is.
     */
    void failed(Link used, Throwable failure) {
        if (used == null || !(unwrap(failure) instanceof RedisReadOnlyException readOnly)) {
            return;
        }
        synchronized (lock) {
            if (link != used) {
                return; // replaced already, by this call's twin or a lost connection
            }
            link = null;
            lastFailure = readOnly;
            lastFailureNanos = ticker.getAsLong();
            used.connection().closeAsync();
            onLost.run();
        }
    }

    /** An attempt's failure as the caller sees it: closed meanwhile or a bug as it is, a Redis failure as FAILED. */
    private static NotConnected failed(Throwable cause) {
        if (cause instanceof RuntimeException re && !(re instanceof RedisException)) {
            throw re;
        }
        return new NotConnected(NotConnected.Reason.FAILED, cause);
    }

    /** Closes the connection; one still being opened is closed by its attempt, which sees closed. Idempotent. */
    void close() {
        synchronized (lock) {
            closed = true;
            Link l = link;
            link = null;
            if (l != null) {
                l.connection().close();
            }
        }
    }

    /** One attempt, on its own thread: connect, set the timeout, initialise. */
    private void connect(CompletableFuture<Link> attempt) {
        Link fresh = null;
        try {
            fresh = connector.get();
            fresh.connection().setTimeout(wait);
            initialiser.accept(fresh);
        } catch (RuntimeException e) {
            if (fresh != null) {
                fresh.connection().closeAsync();
            }
            synchronized (lock) {
                connecting = null;
                lastFailure = e;
                lastFailureNanos = ticker.getAsLong();
            }
            attempt.completeExceptionally(e);
            return;
        } catch (Error e) {
            synchronized (lock) {
                connecting = null;
            }
            attempt.completeExceptionally(e);
            throw e;
        }
        synchronized (lock) {
            connecting = null;
            if (closed) {
                fresh.connection().closeAsync();
                attempt.completeExceptionally(new IllegalStateException(closedMessage));
                return;
            }
            link = fresh;
            lastFailure = null;
        }
        onConnected.run();
        attempt.complete(fresh);
    }
}
