package io.retrysafe.nats;

import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.retrysafe.internal.Require;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Feeds a durable JetStream consumer's messages to a {@link NatsInbox}, which
 * acknowledges each one itself (manual acknowledgement, never auto-ack).
 *
 * <pre>{@code
 * // Pull: one thread pulls batches and processes each message as it arrives.
 * RetrySafeNatsConsumer consumer = RetrySafeNatsConsumer.pull(nats, processor)
 *         .stream("ORDERS").durable("billing").batchSize(10).start();
 * // Push: a dispatcher thread of the connection processes each message as it arrives.
 * RetrySafeNatsConsumer consumer = RetrySafeNatsConsumer.push(nats, processor)
 *         .stream("ORDERS").durable("billing-push").start();
 * ...
 * consumer.close();
 * }</pre>
 *
 * <p>Both bind to a consumer that already exists; the application creates it with its own
 * configuration. {@link Builder#start()} checks the three settings the processor depends on: the
 * consumer acknowledges explicitly ({@code AckPolicy.Explicit}); its kind matches (a pull consumer
 * has no deliver subject); and its {@code max_deliver} is unlimited or at least the inbox's
 * {@code maxAttempts}, so that the processor sees the last delivery and dead-letters it. Instances
 * bound to one pull consumer compete for its messages; a push consumer is shared by its deliver group.
 *
 * <p>{@link #close()} stops fetching (or drains the dispatcher), lets the message in hand finish,
 * and unsubscribes; the durable consumer stays on the server. Messages fetched but not yet
 * processed are nakked so that another instance receives them at once.
 */
public final class RetrySafeNatsConsumer implements AutoCloseable {
    public static final int DEFAULT_BATCH_SIZE = 10;
    public static final Duration DEFAULT_FETCH_TIMEOUT = Duration.ofSeconds(1);
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private static final System.Logger LOG = System.getLogger(RetrySafeNatsConsumer.class.getName());

    private final Builder config;
    private final String label;
    private final CountDownLatch stopping = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);
    private volatile boolean running = true;
    private JetStreamSubscription subscription;
    private Dispatcher dispatcher;
    private Thread fetcher;

    private RetrySafeNatsConsumer(Builder config) {
        this.config = config;
        this.label = "[" + config.processor.inbox().engine().name() + "] " + (config.pull ? "pull" : "push") + " consumer "
                + config.durable + " of stream " + config.stream;
    }

    /** A fetch loop on one thread over a durable pull consumer. */
    public static Builder pull(Connection nats, NatsInbox processor) {
        return new Builder(nats, processor, true);
    }

    /** A dispatcher subscription to a durable push consumer (with its deliver group, if it has one). */
    public static Builder push(Connection nats, NatsInbox processor) {
        return new Builder(nats, processor, false);
    }

    public String stream() {
        return config.stream;
    }

    public String durable() {
        return config.durable;
    }

    /** True until {@link #close()} is called. */
    public boolean isRunning() {
        return running;
    }

    private void startPull(JetStream js) throws IOException, JetStreamApiException {
        subscription = js.subscribe(null, PullSubscribeOptions.bind(config.stream, config.durable));
        fetcher = new Thread(this::fetchLoop, "retrysafe-nats-pull-" + config.stream + "-" + config.durable);
        fetcher.setDaemon(true);
        fetcher.start();
    }

    private void startPush(JetStream js, ConsumerConfiguration consumer) throws IOException, JetStreamApiException {
        dispatcher = config.nats.createDispatcher();
        try {
            subscription = js.subscribe(null, consumer.getDeliverGroup(), dispatcher, this::processGuarded, false,
                    PushSubscribeOptions.bind(config.stream, config.durable));
        } catch (IOException | JetStreamApiException | RuntimeException e) {
            config.nats.closeDispatcher(dispatcher);
            throw e;
        }
        stopped.countDown(); // nothing of ours runs between start and close; the dispatcher's thread is the connection's
    }

    private void fetchLoop() {
        try {
            while (running) {
                // One pull request per round: up to batchSize messages within fetchTimeout, each processed
                // as soon as it arrives (fetch() would hold a partial batch back until the time-out).
                try {
                    Iterator<Message> batch = subscription.iterate(config.batchSize, config.fetchTimeout);
                    while (batch.hasNext()) {
                        Message msg = batch.next();
                        if (running) {
                            processGuarded(msg);
                        } else {
                            nakQuietly(msg);
                        }
                    }
                } catch (RuntimeException e) {
                    if (!running) {
                        break;
                    }
                    // The connection is reconnecting or closed; try again, without spinning.
                    LOG.log(Level.WARNING, () -> label + ": fetch failed, trying again in " + config.fetchTimeout
                            + ": " + e);
                    pause(config.fetchTimeout);
                }
            }
        } finally {
            try {
                subscription.unsubscribe();
            } catch (RuntimeException e) {
                LOG.log(Level.DEBUG, () -> label + ": unsubscribe failed (the connection is closed?): " + e);
            }
            stopped.countDown();
        }
    }

    private void processGuarded(Message msg) {
        try {
            config.processor.process(msg);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (RuntimeException | Error e) {
            // The handler threw an Error, or the processor has a bug: nothing was acknowledged or committed.
            LOG.log(Level.ERROR, () -> label + ": processing " + describe(msg) + " threw; it is left unacknowledged and"
                    + " JetStream delivers it again after ack_wait", e);
        }
    }

    private void nakQuietly(Message msg) {
        try {
            msg.nak();
        } catch (RuntimeException e) {
            LOG.log(Level.DEBUG, () -> label + ": could not nak " + describe(msg) + " while closing: " + e);
        }
    }

    private void pause(Duration duration) {
        try {
            stopping.await(duration.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            running = false;
        }
    }

    private static String describe(Message msg) {
        try {
            return "message " + NatsInbox.position(msg);
        } catch (RuntimeException e) {
            return "a message on " + msg.getSubject();
        }
    }

    /**
     * Stops taking messages and waits, up to the close timeout, for the message in hand; then
     * unsubscribes. The durable consumer and its unacknowledged messages stay on the server.
     */
    @Override
    public void close() {
        if (!running && stopped.getCount() == 0) {
            return;
        }
        running = false;
        stopping.countDown();
        if (config.pull) {
            awaitFetcher();
        } else {
            drainDispatcher();
        }
    }

    private void awaitFetcher() {
        try {
            // A fetch in flight returns within fetchTimeout; then the message in hand finishes.
            if (!stopped.await(config.fetchTimeout.plus(config.closeTimeout).toNanos(), TimeUnit.NANOSECONDS)) {
                LOG.log(Level.WARNING, () -> label + ": still processing after " + config.closeTimeout
                        + "; interrupting " + fetcher.getName());
                fetcher.interrupt();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void drainDispatcher() {
        try {
            CompletableFuture<Boolean> drained = dispatcher.drain(config.closeTimeout);
            if (!Boolean.TRUE.equals(drained.get(config.closeTimeout.plusSeconds(1).toNanos(), TimeUnit.NANOSECONDS))) {
                LOG.log(Level.WARNING, () -> label + ": messages still queued after " + config.closeTimeout
                        + "; JetStream delivers them again after ack_wait");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            LOG.log(Level.WARNING, () -> label + ": draining the dispatcher failed: " + e);
        } finally {
            try {
                if (dispatcher.isActive()) {
                    config.nats.closeDispatcher(dispatcher);
                }
            } catch (RuntimeException e) {
                LOG.log(Level.DEBUG, () -> label + ": closing the dispatcher failed (the connection is closed?): " + e);
            }
        }
    }

    @Override
    public String toString() {
        return "RetrySafeNatsConsumer[" + (config.pull ? "pull" : "push") + ", stream=" + config.stream
                + ", durable=" + config.durable + (config.pull ? ", batchSize=" + config.batchSize + ", fetchTimeout="
                + config.fetchTimeout : "") + ", running=" + running + "]";
    }

    /** Builds and starts a {@link RetrySafeNatsConsumer}; each value may be set once. */
    public static final class Builder {
        private final Connection nats;
        private final NatsInbox processor;
        private final boolean pull;
        private String stream;
        private String durable;
        private Integer batchSize;
        private Duration fetchTimeout;
        private Duration closeTimeout;
        private boolean started;

        private Builder(Connection nats, NatsInbox processor, boolean pull) {
            this.nats = Require.notNull(nats, "nats");
            this.processor = Require.notNull(processor, "processor");
            this.pull = pull;
        }

        public Builder stream(String stream) {
            Require.unset(this.stream, "stream");
            this.stream = name(stream, "stream");
            return this;
        }

        /** The name of the durable consumer to bind to; it is part of the scope of every message id. */
        public Builder durable(String durable) {
            Require.unset(this.durable, "durable");
            this.durable = name(durable, "durable");
            return this;
        }

        /** Pull only: how many messages one fetch asks for; default {@value RetrySafeNatsConsumer#DEFAULT_BATCH_SIZE}. */
        public Builder batchSize(int batchSize) {
            requirePull("batchSize");
            Require.unset(this.batchSize, "batchSize");
            this.batchSize = Require.between(batchSize, 1, 10_000, "batchSize");
            return this;
        }

        /**
         * Pull only: how long one pull request stays open for its batch; default 1 s. Each message is
         * processed as it arrives, and {@link RetrySafeNatsConsumer#close()} waits at most this long
         * for the request in flight. The messages of one batch are processed one after the other, so
         * keep {@code batchSize ×} the handler's time well under the consumer's {@code ack_wait}.
         */
        public Builder fetchTimeout(Duration fetchTimeout) {
            requirePull("fetchTimeout");
            Require.unset(this.fetchTimeout, "fetchTimeout");
            this.fetchTimeout = Require.positive(fetchTimeout, "fetchTimeout");
            if (fetchTimeout.toMillis() < 10) {
                throw new IllegalArgumentException("fetchTimeout must be at least 10 ms, but was " + fetchTimeout);
            }
            return this;
        }

        /** How long {@link RetrySafeNatsConsumer#close()} waits for the message in hand; default 30 s. */
        public Builder closeTimeout(Duration closeTimeout) {
            Require.unset(this.closeTimeout, "closeTimeout");
            this.closeTimeout = Require.positive(closeTimeout, "closeTimeout");
            return this;
        }

        /**
         * Checks the durable consumer on the server and starts taking messages.
         *
         * @throws IllegalStateException if the consumer does not exist or is configured so that the
         *                               processor cannot work with it (the message says which setting)
         */
        public RetrySafeNatsConsumer start() throws IOException, JetStreamApiException {
            if (started) {
                throw new IllegalStateException("this builder already started a consumer");
            }
            if (stream == null || durable == null) {
                throw new IllegalStateException("stream and durable must be set, but was stream=" + stream
                        + ", durable=" + durable);
            }
            try {
                NatsInbox.scope(stream, durable);
            } catch (IllegalArgumentException e) { // too long together
                throw new IllegalStateException(e.getMessage(), e);
            }
            batchSize = batchSize == null ? DEFAULT_BATCH_SIZE : batchSize;
            fetchTimeout = fetchTimeout == null ? DEFAULT_FETCH_TIMEOUT : fetchTimeout;
            closeTimeout = closeTimeout == null ? DEFAULT_CLOSE_TIMEOUT : closeTimeout;
            ConsumerConfiguration consumer = check(nats.jetStreamManagement());
            started = true;
            RetrySafeNatsConsumer c = new RetrySafeNatsConsumer(this);
            if (pull) {
                c.startPull(nats.jetStream());
            } else {
                c.startPush(nats.jetStream(), consumer);
            }
            LOG.log(Level.INFO, () -> c.label + " started: " + processor);
            return c;
        }

        private ConsumerConfiguration check(JetStreamManagement jsm) throws IOException, JetStreamApiException {
            ConsumerInfo info;
            try {
                info = jsm.getConsumerInfo(stream, durable);
            } catch (JetStreamApiException e) {
                if (e.getErrorCode() == 404) {
                    throw new IllegalStateException("consumer " + durable + " of stream " + stream + " does not exist;"
                            + " create it first (durable, AckPolicy.Explicit): " + e.getMessage(), e);
                }
                throw e;
            }
            ConsumerConfiguration cc = info.getConsumerConfiguration();
            String which = "consumer " + durable + " of stream " + stream;
            if (cc.getAckPolicy() != AckPolicy.Explicit) {
                throw new IllegalStateException(which + " must acknowledge explicitly (AckPolicy.Explicit): the"
                        + " processor acknowledges each message after its commit, but was " + cc.getAckPolicy());
            }
            if (pull && cc.getDeliverSubject() != null) {
                throw new IllegalStateException(which + " is a push consumer (deliver subject " + cc.getDeliverSubject()
                        + "); use RetrySafeNatsConsumer.push, or create a pull consumer");
            }
            if (!pull && cc.getDeliverSubject() == null) {
                throw new IllegalStateException(which + " is a pull consumer (no deliver subject); use"
                        + " RetrySafeNatsConsumer.pull, or create a push consumer");
            }
            long maxDeliver = cc.getMaxDeliver();
            int maxAttempts = processor.inbox().maxAttempts();
            if (maxDeliver > 0 && maxDeliver < maxAttempts) {
                throw new IllegalStateException(which + " must have max_deliver unlimited (-1) or at least the"
                        + " inbox's maxAttempts (" + maxAttempts + "), so that the processor sees the last delivery"
                        + " and dead-letters it, but was " + maxDeliver);
            }
            return cc;
        }

        private void requirePull(String setting) {
            if (!pull) {
                throw new IllegalStateException(setting + " applies to pull consumers only, but this is a push consumer");
            }
        }

        private static String name(String value, String what) {
            Require.notNull(value, what);
            if (value.isEmpty() || !value.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '.' && c != '*'
                    && c != '>' && c != '/' && c != '\\')) {
                throw new IllegalArgumentException(what + " must be a JetStream name (printable ASCII without white"
                        + " space, '.', '*', '>', '/' or '\\'), but was \"" + value + "\"");
            }
            return value;
        }
    }
}
