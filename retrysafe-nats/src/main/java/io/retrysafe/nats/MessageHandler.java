package io.retrysafe.nats;

import io.nats.client.Message;
import io.retrysafe.Attempt;
import java.sql.Connection;

/**
 * The business work for one JetStream message. It must do every database write that belongs to
 * the message on {@code jdbcConnection}: that connection's transaction is the one that also marks
 * the message id as processed, and it is committed only if this method returns normally.
 *
 * <p>It must not acknowledge the message, commit, roll back or close the connection: the
 * {@link NatsInbox} does all of that. A handler running longer than the
 * consumer's {@code ack_wait} may call {@link Message#inProgress()} to keep the message from being
 * redelivered meanwhile.
 *
 * <p>Throwing means "not processed": the transaction is rolled back and the message is delivered
 * again later, or dead-lettered once its deliveries reach the inbox's {@code maxAttempts}.
 */
@FunctionalInterface
public interface MessageHandler {

    /**
     * @param msg            the JetStream message; {@link Message#metaData()} tells its stream sequence
     *                       and how often it was delivered
     * @param jdbcConnection the transaction's connection, with auto-commit off
     * @param attempt        its key is the message id in the scope {@code nats:<stream>:<consumer>};
     *                       its number is the delivery's (JetStream's {@code deliveredCount})
     */
    void handle(Message msg, Connection jdbcConnection, Attempt attempt) throws Exception;
}
