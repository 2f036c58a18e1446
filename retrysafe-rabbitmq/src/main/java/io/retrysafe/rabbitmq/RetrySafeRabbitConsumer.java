package io.retrysafe.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.AlreadyClosedException;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.ShutdownSignalException;
import io.retrysafe.internal.Require;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * Consumes a queue with manual acknowledgement: each delivery is processed on a worker thread of
 * this consumer, and acknowledged only when the processing answered that it is done (committed,
 * replayed, or dead-lettered and confirmed). A delivery that is not done (the database failed,
 * another delivery holds its id) is processed again on the same worker after the delay it was
 * given, before the next message: the queue's order is kept whatever the prefetch.
 *
 * <p>{@code concurrency} workers, each with a channel of its own and {@code basicQos(prefetch)}
 * (defaults {@value #DEFAULT_CONCURRENCY} and {@value #DEFAULT_PREFETCH}). With one worker the
 * queue's messages are processed in the queue's order; with several, in parallel and in no order.
 * The processing runs on the consumer's own threads, not on the connection's dispatch pool, so a
 * long handler or a back-off does not hold up other consumers of the connection.
 *
 * <p>A crash, or a lost connection, leaves the worker's unacknowledged deliveries with the broker,
 * which delivers them again: a delivery whose transaction had committed is then replayed.
 */
public final class RetrySafeRabbitConsumer implements AutoCloseable {
    public static final int DEFAULT_CONCURRENCY = 1;
    public static final int DEFAULT_PREFETCH = 10;
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(30);

    private static final System.Logger LOG = System.getLogger(RetrySafeRabbitConsumer.class.getName());
    /** How often an idle worker looks whether it was closed. */
    private static final Duration IDLE_POLL = Duration.ofMillis(200);

    private final Builder config;
    private final String label;
    private final List<Worker> workers = new ArrayList<>();
    private final CountDownLatch stopping = new CountDownLatch(1);
    private volatile boolean running = true;

    private RetrySafeRabbitConsumer(Builder config, String label) {
        this.config = config;
        this.label = label;
    }

    /** Consumes with {@code inbox} on {@code connection}; the connection stays the application's. */
    public static Builder builder(Connection connection, RabbitInbox inbox) {
        Require.notNull(inbox, "inbox");
        if (!inbox.hasHandler()) {
            throw new IllegalArgumentException("the RabbitInbox has no handler: build it with RabbitInbox.builder(inbox, "
                    + "handler)");
        }
        return new Builder(connection, inbox::settle, inbox.name(), inbox::checkQueue);
    }

    static Builder builder(Connection connection, DeliveryProcessor processor, String name) {
        return new Builder(connection, processor, name, queue -> { });
    }

    public String queue() {
        return config.queue;
    }

    /** True until {@link #close()} is called. */
    public boolean isRunning() {
        return running;
    }

    private void startWorkers() throws IOException {
        try {
            for (int i = 0; i < config.concurrency; i++) {
                Worker worker = new Worker(i);
                workers.add(worker);
                worker.start();
            }
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    /** One channel, one consumer tag, one thread. */
    private final class Worker {
        private final int index;
        private final BlockingQueue<Delivery> deliveries = new LinkedBlockingQueue<>();
        private final CountDownLatch stopped = new CountDownLatch(1);
        private Channel channel;
        private String consumerTag;
        private Thread thread;

        Worker(int index) {
            this.index = index;
        }

        void start() throws IOException {
            channel = config.connection.createChannel();
            if (channel == null) {
                throw new IOException("the connection has no channel left (channel_max reached)");
            }
            channel.basicQos(config.prefetch);
            consumerTag = channel.basicConsume(config.queue, false, (tag, delivery) -> deliveries.add(delivery),
                    tag -> {
                        if (running) {
                            LOG.log(Level.WARNING, () -> label + ": the broker cancelled consumer " + tag
                                    + " (the queue was deleted?); worker " + index + " stops taking messages");
                        }
                    });
            thread = new Thread(this::run, "retrysafe-rabbitmq-" + config.queue + "-" + index);
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            try {
                while (running) {
                    Delivery delivery;
                    try {
                        delivery = deliveries.poll(IDLE_POLL.toMillis(), TimeUnit.MILLISECONDS);
                    } catch (InterruptedException e) {
                        break;
                    }
                    if (delivery != null) {
                        settle(delivery, processUntilDone(delivery));
                    }
                }
            } finally {
                stopped.countDown();
            }
        }

        /** Null when the consumer was closed before the delivery was done. */
        private Settlement processUntilDone(Delivery delivery) {
            while (true) {
                Settlement settlement;
                try {
                    settlement = config.processor.process(config.queue, delivery);
                } catch (VirtualMachineError e) {
                    throw e;
                } catch (RuntimeException | Error e) {
                    // The handler threw an Error, or the processor has a bug: nothing was committed.
                    LOG.log(Level.ERROR, () -> label + ": processing " + Deliveries.describe(config.queue, delivery)
                            + " threw; trying it again in " + config.errorDelay, e);
                    settlement = new Settlement.Retry(config.errorDelay, e.toString());
                }
                if (settlement instanceof Settlement.Retry retry) {
                    if (!pause(retry.delay())) {
                        return null;
                    }
                    continue;
                }
                return settlement;
            }
        }

        private void settle(Delivery delivery, Settlement settlement) {
            long tag = delivery.getEnvelope().getDeliveryTag();
            try {
                if (settlement == null) {
                    channel.basicNack(tag, false, true);
                } else {
                    channel.basicAck(tag, false);
                }
            } catch (IOException | AlreadyClosedException e) {
                // The broker delivers it again to another consumer (or this one, after a recovery): replayed then.
                LOG.log(Level.WARNING, () -> label + ": could not " + (settlement == null ? "requeue " : "acknowledge ")
                        + Deliveries.describe(config.queue, delivery) + " (the channel is closed?); the broker delivers"
                        + " it again: " + e);
            }
        }

        void cancel() {
            try {
                if (channel != null && channel.isOpen() && consumerTag != null) {
                    channel.basicCancel(consumerTag);
                }
            } catch (IOException | ShutdownSignalException e) {
                LOG.log(Level.DEBUG, () -> label + ": cancelling worker " + index + " failed (the channel is closed?): "
                        + e);
            }
        }

        void await(long deadlineNanos) {
            if (thread == null) {
                return;
            }
            try {
                if (!stopped.await(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    LOG.log(Level.WARNING, () -> label + ": worker " + index + " still processing after "
                            + config.closeTimeout + "; interrupting it");
                    thread.interrupt();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /** Closing the channel returns its unacknowledged deliveries, those still queued here included, to the queue. */
        void closeChannel() {
            try {
                if (channel != null && channel.isOpen()) {
                    channel.close();
                }
            } catch (IOException | TimeoutException | ShutdownSignalException e) {
                LOG.log(Level.DEBUG, () -> label + ": closing worker " + index + "'s channel failed: " + e);
            }
        }
    }

    /** Waits {@code delay} unless closed meanwhile; false if closed. */
    private boolean pause(Duration delay) {
        try {
            return !stopping.await(delay.toNanos(), TimeUnit.NANOSECONDS) && running;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * Stops taking messages and waits, up to the close timeout, for the deliveries in hand; then
     * closes the consumer's channels, which returns every unacknowledged delivery to the queue.
     */
    @Override
    public void close() {
        if (!running) {
            return;
        }
        running = false;
        stopping.countDown();
        workers.forEach(Worker::cancel);
        long deadline = System.nanoTime() + config.closeTimeout.toNanos();
        workers.forEach(w -> w.await(deadline));
        workers.forEach(Worker::closeChannel);
        LOG.log(Level.INFO, () -> label + " closed");
    }

    @Override
    public String toString() {
        return "RetrySafeRabbitConsumer[queue=" + config.queue + ", concurrency=" + config.concurrency + ", prefetch="
                + config.prefetch + ", running=" + running + "]";
    }

    /** Builds and starts a {@link RetrySafeRabbitConsumer}; each value may be set once. */
    public static final class Builder {
        private final Connection connection;
        private final DeliveryProcessor processor;
        private final String name;
        private final Consumer<String> queueCheck;
        private String queue;
        private Integer concurrency;
        private Integer prefetch;
        private Duration closeTimeout;
        private Duration errorDelay = Duration.ofSeconds(1);
        private boolean started;

        private Builder(Connection connection, DeliveryProcessor processor, String name,
                Consumer<String> queueCheck) {
            this.connection = Require.notNull(connection, "connection");
            this.processor = Require.notNull(processor, "processor");
            this.name = name;
            this.queueCheck = queueCheck;
        }

        /** The queue to consume; it must exist (declare it, and its bindings, before). */
        public Builder queue(String queue) {
            Require.unset(this.queue, "queue");
            Require.notNull(queue, "queue");
            if (queue.isEmpty() || queue.length() > 255) {
                throw new IllegalArgumentException("queue must be a queue's name of 1 to 255 characters, but was \""
                        + queue + "\"");
            }
            this.queue = queue;
            return this;
        }

        /**
         * How many workers (each a channel and a thread) process the queue's messages; default
         * {@value RetrySafeRabbitConsumer#DEFAULT_CONCURRENCY}, which keeps the queue's order.
         */
        public Builder concurrency(int concurrency) {
            Require.unset(this.concurrency, "concurrency");
            this.concurrency = Require.between(concurrency, 1, 256, "concurrency");
            return this;
        }

        /**
         * How many unacknowledged messages the broker sends each worker ahead; default
         * {@value RetrySafeRabbitConsumer#DEFAULT_PREFETCH}. A crash returns them all to the queue.
         */
        public Builder prefetch(int prefetch) {
            Require.unset(this.prefetch, "prefetch");
            this.prefetch = Require.between(prefetch, 1, 65_535, "prefetch");
            return this;
        }

        /** How long {@link RetrySafeRabbitConsumer#close()} waits for the deliveries in hand; default 30 s. */
        public Builder closeTimeout(Duration closeTimeout) {
            Require.unset(this.closeTimeout, "closeTimeout");
            this.closeTimeout = Require.positive(closeTimeout, "closeTimeout");
            return this;
        }

        /**
         * Checks that the queue exists and starts the workers.
         *
         * @throws IllegalStateException if the queue does not exist, or no queue was set, or the queue's name
         *         makes the scope of its messages' keys longer than the inbox takes
         */
        public RetrySafeRabbitConsumer start() throws IOException {
            if (started) {
                throw new IllegalStateException("this builder already started a consumer");
            }
            if (queue == null) {
                throw new IllegalStateException("queue must be set");
            }
            queueCheck.accept(queue);
            concurrency = concurrency == null ? DEFAULT_CONCURRENCY : concurrency;
            prefetch = prefetch == null ? DEFAULT_PREFETCH : prefetch;
            closeTimeout = closeTimeout == null ? DEFAULT_CLOSE_TIMEOUT : closeTimeout;
            checkQueue();
            started = true;
            RetrySafeRabbitConsumer consumer = new RetrySafeRabbitConsumer(this, "[" + name + "] consumer of queue "
                    + queue);
            consumer.startWorkers();
            LOG.log(Level.INFO, () -> consumer.label + " started: " + consumer);
            return consumer;
        }

        private void checkQueue() throws IOException {
            Channel channel = connection.createChannel();
            if (channel == null) {
                throw new IOException("the connection has no channel left (channel_max reached)");
            }
            try {
                AMQP.Queue.DeclareOk ok = channel.queueDeclarePassive(queue);
                LOG.log(Level.DEBUG, () -> "queue " + queue + ": " + ok.getMessageCount() + " messages ready, "
                        + ok.getConsumerCount() + " consumers");
            } catch (IOException e) {
                if (e.getCause() instanceof ShutdownSignalException signal && signal.getReason()
                        instanceof AMQP.Channel.Close close && close.getReplyCode() == AMQP.NOT_FOUND) {
                    throw new IllegalStateException("queue " + queue + " does not exist; declare it (and bind it) "
                            + "before starting the consumer: " + close.getReplyText(), e);
                }
                throw e;
            } finally {
                try {
                    if (channel.isOpen()) {
                        channel.close();
                    }
                } catch (TimeoutException | ShutdownSignalException e) {
                    LOG.log(Level.DEBUG, () -> "closing the queue check's channel failed: " + e);
                }
            }
        }
    }
}
