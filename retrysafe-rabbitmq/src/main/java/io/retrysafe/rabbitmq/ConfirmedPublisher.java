package io.retrysafe.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ReturnListener;
import io.retrysafe.internal.Require;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Publishes a message and returns only once the broker confirmed it: RabbitMQ's publisher
 * confirms on a channel of its own, and {@code mandatory}, so that a message no queue takes (an
 * unbound routing key, a queue that does not exist) is a failure instead of a message the broker
 * confirms and drops. The consumer acknowledges an original only after its dead letter was
 * confirmed; a publish that throws leaves the original to be tried again.
 *
 * <p>One publish at a time (publishers of a processor wait for each other): dead letters are rare,
 * and a confirm then names exactly the message just sent. The channel is opened on first use and
 * again after it failed, on the connection the application gives at that moment (a framework's
 * connection factory may have replaced a failed one); the connection is never closed here.
 */
public final class ConfirmedPublisher implements AutoCloseable {
    public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(30);

    private static final System.Logger LOG = System.getLogger(ConfirmedPublisher.class.getName());

    private final Supplier<? extends Connection> connections;
    private final Duration confirmTimeout;
    private Channel channel; // guarded by this
    private volatile String returned; // set by the return listener, between a publish and its confirm

    private ConfirmedPublisher(Supplier<? extends Connection> connections, Duration confirmTimeout) {
        this.connections = connections;
        this.confirmTimeout = confirmTimeout;
    }

    /** Publishes on {@code connection}, waiting at most {@link #DEFAULT_CONFIRM_TIMEOUT} (30 s) for each confirm. */
    public static ConfirmedPublisher of(Connection connection) {
        return of(connection, DEFAULT_CONFIRM_TIMEOUT);
    }

    public static ConfirmedPublisher of(Connection connection, Duration confirmTimeout) {
        Require.notNull(connection, "connection");
        return of(() -> connection, confirmTimeout);
    }

    /** Opens its channel on the connection {@code connections} gives when it needs one (the first, or after a failure). */
    public static ConfirmedPublisher of(Supplier<? extends Connection> connections, Duration confirmTimeout) {
        return new ConfirmedPublisher(Require.notNull(connections, "connections"),
                Require.positive(confirmTimeout, "confirmTimeout"));
    }

    /**
     * Publishes {@code body} to {@code exchange} with {@code routingKey}, persistent unless
     * {@code properties} say otherwise, and waits for the broker's confirm.
     *
     * @throws IOException if the broker refused it (nack), no queue took it, the channel failed, or
     *                     no confirm came within the confirm timeout
     */
    public synchronized void publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body)
            throws IOException, InterruptedException {
        Require.notNull(exchange, "exchange");
        Require.notNull(routingKey, "routingKey");
        Channel ch = channel();
        returned = null;
        try {
            ch.basicPublish(exchange, routingKey, true, properties, body);
            // A return comes before the confirm of the same message.
            ch.waitForConfirmsOrDie(confirmTimeout.toMillis());
        } catch (TimeoutException e) {
            // waitForConfirmsOrDie closed the channel; the next publish opens another.
            channel = null;
            throw new IOException("no publisher confirm from the broker within " + confirmTimeout + " for a message to "
                    + where(exchange, routingKey), e);
        } catch (IOException | RuntimeException e) {
            channel = null;
            closeQuietly(ch);
            throw new IOException("the broker did not confirm a message to " + where(exchange, routingKey) + ": " + e,
                    e);
        }
        String returnedBecause = returned;
        if (returnedBecause != null) {
            throw new IOException("no queue took the message to " + where(exchange, routingKey) + " (returned: "
                    + returnedBecause + "); declare and bind the dead-letter queue");
        }
    }

    private Channel channel() throws IOException {
        // Outside the try of publish: a connection that cannot give a channel is a failed publish too.
        if (channel == null || !channel.isOpen()) {
            Channel ch = connections.get().createChannel();
            if (ch == null) {
                throw new IOException("the connection has no channel left (channel_max reached)");
            }
            ch.confirmSelect();
            ReturnListener onReturn = (replyCode, replyText, exchange, routingKey, properties, body) ->
                    returned = replyCode + " " + replyText;
            ch.addReturnListener(onReturn);
            channel = ch;
        }
        return channel;
    }

    private static String where(String exchange, String routingKey) {
        return (exchange.isEmpty() ? "the default exchange" : "exchange " + exchange) + " with routing key "
                + routingKey;
    }

    private static void closeQuietly(Channel ch) {
        try {
            if (ch.isOpen()) {
                ch.close();
            }
        } catch (IOException | TimeoutException | RuntimeException e) {
            LOG.log(Level.DEBUG, () -> "closing a failed publisher channel failed: " + e);
        }
    }

    /** Closes the publisher's channel; the connection stays open. */
    @Override
    public synchronized void close() {
        if (channel != null) {
            closeQuietly(channel);
            channel = null;
        }
    }

    @Override
    public String toString() {
        return "ConfirmedPublisher[confirmTimeout=" + confirmTimeout + "]";
    }
}
