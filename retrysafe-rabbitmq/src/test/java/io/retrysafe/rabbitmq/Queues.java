package io.retrysafe.rabbitmq;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.retrysafe.testservices.TestRabbit;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;

/** Queues the tests declare on the shared broker (unique names, deleted afterwards), and what is in them. */
final class Queues implements AutoCloseable {
    enum Type { CLASSIC, QUORUM }

    private final Connection connection;
    private final Channel channel;
    private final List<String> declared = new ArrayList<>();

    private Queues(Connection connection) throws IOException {
        this.connection = connection;
        this.channel = connection.createChannel();
    }

    static Queues open(String connectionName) throws IOException {
        return new Queues(TestRabbit.connect(connectionName));
    }

    Connection connection() {
        return connection;
    }

    /** A durable queue of {@code type} with a unique name starting with {@code prefix}. */
    String declare(String prefix, Type type) throws IOException {
        String name = TestRabbit.uniqueName(prefix);
        Map<String, Object> arguments = type == Type.QUORUM ? Map.of("x-queue-type", "quorum") : Map.of();
        channel.queueDeclare(name, true, false, false, arguments);
        declared.add(name);
        return name;
    }

    /** Publishes {@code body} to {@code queue} (default exchange) with AMQP {@code message-id} {@code id} (none if null). */
    void publish(String queue, String id, String body) throws IOException {
        publish(queue, new AMQP.BasicProperties.Builder().messageId(id).deliveryMode(2).build(), body);
    }

    void publish(String queue, AMQP.BasicProperties properties, String body) throws IOException {
        channel.basicPublish("", queue, properties, body.getBytes(StandardCharsets.UTF_8));
    }

    /** Ready messages (not those a consumer holds unacknowledged). */
    long ready(String queue) throws IOException {
        return channel.queueDeclarePassive(queue).getMessageCount();
    }

    /** Takes the next ready message of {@code queue} (acknowledged), or null. */
    GetResponse take(String queue) throws IOException {
        return channel.basicGet(queue, true);
    }

    Channel channel() {
        return channel;
    }

    @Override
    public void close() throws IOException, TimeoutException {
        try {
            for (String queue : declared) {
                channel.queueDelete(queue);
            }
        } finally {
            connection.close();
        }
    }
}
