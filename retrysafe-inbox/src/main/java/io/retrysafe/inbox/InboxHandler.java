package io.retrysafe.inbox;

import io.retrysafe.Attempt;
import java.sql.Connection;

/**
 * The application's work for one message, as an adapter wraps it. Its writes on {@code connection}
 * join the transaction that marks the message processed: both commit together, or neither does.
 *
 * <p>Do not commit, roll back or close {@code connection}, nor change its auto-commit mode. An
 * exception rolls the transaction back; the message is tried again (in the same call or on the
 * broker's next delivery, as the inbox's {@link RetryStyle} says) until the inbox's
 * {@code maxAttempts}, then dead-lettered. {@code attempt.number()} counts the tries of this
 * message, {@code attempt.key().value()} is its message id: pass it to any system outside the
 * database the handler calls (a payment provider, a mailer) as that system's idempotency key,
 * because those effects are not rolled back.
 */
@FunctionalInterface
public interface InboxHandler {

    void handle(Connection connection, Attempt attempt) throws Exception;
}
