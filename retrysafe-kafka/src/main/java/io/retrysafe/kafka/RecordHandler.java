package io.retrysafe.kafka;

import io.retrysafe.Attempt;
import java.sql.Connection;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The application's work for one record. Its writes on {@code connection} join the transaction that
 * marks the message processed: both commit together, or neither does.
 *
 * <pre>{@code
 * RecordHandler<String, String> handler = (record, connection, attempt) -> {
 *     try (PreparedStatement ps = connection.prepareStatement("INSERT INTO shipment (order_id) VALUES (?)")) {
 *         ps.setString(1, record.value());
 *         ps.executeUpdate();
 *     }
 * };
 * }</pre>
 *
 * <p>Do not commit, roll back or close {@code connection}, nor change its auto-commit mode. An
 * exception rolls the transaction back and the record is tried again, up to the processor's
 * {@code maxAttempts}; {@code attempt.number()} says which try this is. A side effect outside the
 * database (an e-mail, a call to a payment provider) is not rolled back: pass the message id
 * ({@code attempt.key().value()}) to that system as its idempotency key.
 */
@FunctionalInterface
public interface RecordHandler<K, V> {

    void handle(ConsumerRecord<K, V> record, Connection connection, Attempt attempt) throws Exception;
}
