package io.retrysafe.kafka;

import java.nio.charset.StandardCharsets;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;

/** Consumer records made by hand, for tests that need no broker. */
final class TestRecords {
    private TestRecords() {
    }

    /** A record of {@code topic}-0 at {@code offset}, with header idempotency-key = {@code id} unless it is null. */
    static ConsumerRecord<String, String> record(String topic, long offset, String id, String value) {
        RecordHeaders headers = new RecordHeaders();
        if (id != null) {
            headers.add(MessageIds.DEFAULT_HEADER, id.getBytes(StandardCharsets.UTF_8));
        }
        return new ConsumerRecord<>(topic, 0, offset, 0L, TimestampType.CREATE_TIME, -1, -1, "key-" + offset, value,
                headers, Optional.empty());
    }
}
