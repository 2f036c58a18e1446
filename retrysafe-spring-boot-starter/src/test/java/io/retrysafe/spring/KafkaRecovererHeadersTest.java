package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.InboxResult;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.junit.jupiter.api.Test;

class KafkaRecovererHeadersTest {
    private final KafkaRecovererHeaders headers = new KafkaRecovererHeaders();

    @Test
    void aListenerFailingOnOneRecordCallAfterCallCountsTheCallsInItsAttemptsHeader() {
        ConsumerRecord<String, String> record = record(7);
        for (int call = 0; call < 3; call++) {
            headers.noteDeadLetter(record, deadLetter(record, DeadLetterReason.HANDLER_FAILED));
        }

        Map<String, String> published = read(headers.headers(record, new IllegalStateException("x")));

        assertThat(published).as("as the inbox gives them after three attempts").isEqualTo(DeadLetterHeaders.of(
                delivery(record), DeadLetterReason.HANDLER_FAILED, 3, "java.lang.IllegalStateException: down"));
        assertThat(read(headers.headers(record, null))).as("taken once").isEmpty();
    }

    @Test
    void anotherRecordOfThePartitionStartsTheCountAgain() {
        ConsumerRecord<String, String> first = record(7);
        ConsumerRecord<String, String> next = record(8);
        headers.noteDeadLetter(first, deadLetter(first, DeadLetterReason.HANDLER_FAILED));
        headers.noteDeadLetter(first, deadLetter(first, DeadLetterReason.HANDLER_FAILED));
        headers.noteDeadLetter(next, deadLetter(next, DeadLetterReason.HANDLER_FAILED));

        assertThat(read(headers.headers(first, null))).as("no longer noted").isEmpty();
        assertThat(read(headers.headers(next, null))).containsEntry(DeadLetterHeaders.ATTEMPTS, "1")
                .containsEntry(DeadLetterHeaders.POSITION, "orders-0@8");
    }

    @Test
    void aRefusedRecordKeepsTheInboxsHeadersAsTheyAre() {
        ConsumerRecord<String, String> record = record(3);
        InboxResult.DeadLetter mismatch = deadLetter(record, DeadLetterReason.FINGERPRINT_MISMATCH);
        headers.noteDeadLetter(record, mismatch);

        assertThat(read(headers.headers(record, null))).isEqualTo(mismatch.headers());
    }

    @Test
    void aRecordThatPassedAfterItFailedIsNoLongerNoted() {
        ConsumerRecord<String, String> record = record(5);
        headers.noteDeadLetter(record, deadLetter(record, DeadLetterReason.HANDLER_FAILED));
        headers.notePassed(record(4));
        assertThat(headers.headers(record, null).toArray()).as("an earlier record does not clear it").isNotEmpty();

        headers.noteDeadLetter(record, deadLetter(record, DeadLetterReason.HANDLER_FAILED));
        headers.notePassed(record);

        assertThat(headers.headers(record, null).toArray()).isEmpty();
    }

    @Test
    void anotherThreadSeesNothing() throws Exception {
        ConsumerRecord<String, String> record = record(1);
        headers.noteDeadLetter(record, deadLetter(record, DeadLetterReason.HANDLER_FAILED));
        Header[][] seen = new Header[1][];
        Thread other = new Thread(() -> seen[0] = headers.headers(record, null).toArray());
        other.start();
        other.join();

        assertThat(seen[0]).isEmpty();
    }

    private static ConsumerRecord<String, String> record(long offset) {
        return new ConsumerRecord<>("orders", 0, offset, "k", "v");
    }

    private static Delivery delivery(ConsumerRecord<?, ?> record) {
        return Delivery.of("kafka:g:orders", "id-1", record.value(), record.topic() + "-" + record.partition() + "@"
                + record.offset());
    }

    /** As the inbox gives it in this mode: one attempt per call. */
    private static InboxResult.DeadLetter deadLetter(ConsumerRecord<?, ?> record, DeadLetterReason reason) {
        int attempts = reason == DeadLetterReason.HANDLER_FAILED ? 1 : 0;
        String error = "java.lang.IllegalStateException: down";
        return new InboxResult.DeadLetter(reason, attempts, error,
                DeadLetterHeaders.of(delivery(record), reason, attempts, error));
    }

    private static Map<String, String> read(Headers headers) {
        Map<String, String> read = new LinkedHashMap<>();
        for (Header header : headers) {
            read.put(header.key(), new String(header.value(), StandardCharsets.UTF_8));
        }
        return read;
    }
}
