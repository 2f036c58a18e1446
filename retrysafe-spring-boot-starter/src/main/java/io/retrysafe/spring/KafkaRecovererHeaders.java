package io.retrysafe.spring;

import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.kafka.KafkaInbox;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * With {@code retrysafe.kafka.dead-letters=error-handler}: the inbox's {@code retrysafe-dlt-*}
 * headers on the dead letters Spring Kafka's {@code DeadLetterPublishingRecoverer} publishes, so that
 * they carry what a dead letter of {@code dead-letters=inbox} carries. The advice notes the inbox's
 * dead letter of a record it throws for ({@link #noteDeadLetter}); the recoverer's headers function
 * ({@link #headers}) adds it. Both run on the consumer's thread (the error handler recovers there), so
 * the notes are per thread, the last failed record of each partition, as Spring's error handler keeps
 * its failures.
 *
 * <p>The inbox runs one attempt per call in this mode, so {@value DeadLetterHeaders#ATTEMPTS} of a
 * failing listener counts the calls that failed on the record one after another, here.
 */
final class KafkaRecovererHeaders {
    private final ThreadLocal<Map<TopicPartition, Noted>> noted = ThreadLocal.withInitial(HashMap::new);

    /** The inbox's headers of the record at {@code offset}, which failed {@code failedCalls} calls in a row. */
    private record Noted(long offset, int failedCalls, Map<String, String> headers) {
    }

    /** The inbox gave {@code record} up in this call: its headers, for the recoverer if the error handler gives up too. */
    void noteDeadLetter(ConsumerRecord<?, ?> record, InboxResult.DeadLetter deadLetter) {
        Map<TopicPartition, Noted> byPartition = noted.get();
        TopicPartition partition = new TopicPartition(record.topic(), record.partition());
        Noted before = byPartition.get(partition);
        Map<String, String> headers = new LinkedHashMap<>(deadLetter.headers());
        int failedCalls = 0;
        if (deadLetter.reason() == DeadLetterReason.HANDLER_FAILED) {
            failedCalls = (before != null && before.offset() == record.offset() ? before.failedCalls() : 0) + 1;
            headers.put(DeadLetterHeaders.ATTEMPTS, Integer.toString(failedCalls));
        }
        byPartition.put(partition, new Noted(record.offset(), failedCalls, headers));
    }

    /** {@code record} passed (processed, replayed): a note of it or of a record before it is done with. */
    void notePassed(ConsumerRecord<?, ?> record) {
        Map<TopicPartition, Noted> byPartition = noted.get();
        TopicPartition partition = new TopicPartition(record.topic(), record.partition());
        Noted before = byPartition.get(partition);
        if (before != null && before.offset() <= record.offset()) {
            byPartition.remove(partition);
        }
    }

    /**
     * A {@code DeadLetterPublishingRecoverer}'s headers function: the inbox's headers of {@code record} if
     * the advice noted them on this thread, else none (a failure the inbox did not see, such as a
     * deserialization error, or a record of a container the advice does not cover).
     */
    Headers headers(ConsumerRecord<?, ?> record, Exception failure) {
        Map<TopicPartition, Noted> byPartition = noted.get();
        TopicPartition partition = new TopicPartition(record.topic(), record.partition());
        Noted note = byPartition.get(partition);
        if (note != null && note.offset() == record.offset()) {
            byPartition.remove(partition);
            return KafkaInbox.headers(note.headers());
        }
        return new RecordHeaders();
    }
}
