package io.retrysafe.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.InvalidKeyException;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

class MessageIdsTest {

    @Test
    void theDefaultHeaderIsIdempotencyKey() {
        assertThat(MessageIds.defaultHeader().idOf(TestRecords.record("orders", 1, "msg-1", "v")))
                .isEqualTo("msg-1");
        assertThat(MessageIds.defaultHeader()).hasToString("header(idempotency-key)");
    }

    @Test
    void aRecordWithoutTheHeaderHasNoId() {
        assertThat(MessageIds.defaultHeader().idOf(TestRecords.record("orders", 1, null, "v"))).isNull();
    }

    @Test
    void aHeaderWithoutValueIsNoId() {
        ConsumerRecord<String, String> record = TestRecords.record("orders", 1, null, "v");
        record.headers().add(MessageIds.DEFAULT_HEADER, null);
        assertThat(MessageIds.defaultHeader().idOf(record)).isNull();
    }

    @Test
    void theHeaderTwiceIsRefused() {
        ConsumerRecord<String, String> record = TestRecords.record("orders", 1, "msg-1", "v");
        record.headers().add(MessageIds.DEFAULT_HEADER, "msg-2".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> MessageIds.defaultHeader().idOf(record))
                .isInstanceOfSatisfying(InvalidKeyException.class,
                        e -> assertThat(e.rule()).isEqualTo(InvalidKeyException.Rule.MULTIPLE_VALUES))
                .hasMessage("header idempotency-key must have one value, but had 2");
    }

    @Test
    void bytesThatAreNotUtf8AreRefused() {
        ConsumerRecord<String, String> record = TestRecords.record("orders", 1, null, "v");
        record.headers().add("id", new byte[] {'a', (byte) 0xff});
        assertThatThrownBy(() -> MessageIds.header("id").idOf(record))
                .isInstanceOfSatisfying(InvalidKeyException.class,
                        e -> assertThat(e.rule()).isEqualTo(InvalidKeyException.Rule.MALFORMED))
                .hasMessage("header id is not UTF-8");
    }

    @Test
    void cloudEventsIdIsTheCeIdHeader() {
        ConsumerRecord<String, String> record = TestRecords.record("orders", 1, "not this one", "v");
        record.headers().add("ce_id", "A234-1234-1234".getBytes(StandardCharsets.UTF_8));
        assertThat(MessageIds.cloudEventsId().idOf(record)).isEqualTo("A234-1234-1234");
    }

    @Test
    void topicPartitionOffsetIsThePositionWithinTheTopic() {
        assertThat(MessageIds.topicPartitionOffset().idOf(TestRecords.record("orders", 42, null, "v")))
                .isEqualTo("0@42");
    }

    @Test
    void aBlankHeaderNameIsRefused() {
        assertThatThrownBy(() -> MessageIds.header(" ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("name must not be blank, but was \" \"");
    }
}
