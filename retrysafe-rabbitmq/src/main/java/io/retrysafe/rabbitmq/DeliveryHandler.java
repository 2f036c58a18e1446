package io.retrysafe.rabbitmq;

import com.rabbitmq.client.Delivery;
import io.retrysafe.Attempt;
import java.sql.Connection;

/**
 * The business work for one RabbitMQ message. It must do every database write that belongs to the
 * message on {@code jdbcConnection}: that connection's transaction is the one that also marks the
 * message id as processed, and it is committed only if this method returns normally.
 *
 * <p>It must not acknowledge the message, commit, roll back or close the connection: the
 * {@link RabbitInbox} and its consumer do all of that. Throwing means "not processed": the
 * transaction is rolled back and the handler runs again after a back-off, up to the inbox's
 * {@code maxAttempts}, then the message is dead-lettered.
 */
@FunctionalInterface
public interface DeliveryHandler {

    /**
     * @param delivery       the message as the broker delivered it: body, properties, envelope
     * @param jdbcConnection the transaction's connection, with auto-commit off
     * @param attempt        the inbox's attempt; its key is the message id in the scope
     *                       {@code rabbitmq:<consumer name>:<queue>}
     */
    void handle(Delivery delivery, Connection jdbcConnection, Attempt attempt) throws Exception;
}
