package io.retrysafe.kafka;

import io.retrysafe.InvalidKeyException;
import io.retrysafe.InvalidKeyException.Rule;
import io.retrysafe.internal.Require;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.stream.StreamSupport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Where a record's message id comes from: the id its producer gave the message, the same on every
 * retry of the send. The processor checks the id against its {@link io.retrysafe.KeyRules} (1 to 255
 * printable ASCII characters by default).
 *
 * <pre>{@code
 * MessageIds.header("idempotency-key")   // the default
 * MessageIds.cloudEventsId()            // CloudEvents Kafka binding, binary mode: header ce_id
 * MessageIds.topicPartitionOffset()     // no id from the producer: catches redeliveries only
 * }</pre>
 */
@FunctionalInterface
public interface MessageIds {
    /** The header {@link #header(String)} reads by default. */
    String DEFAULT_HEADER = "idempotency-key";
    /** The CloudEvents Kafka protocol binding's header for the event id (binary content mode). */
    String CLOUDEVENTS_ID_HEADER = "ce_id";

    /**
     * The record's message id, or {@code null} if it has none (it is then dead-lettered as
     * {@link io.retrysafe.inbox.DeadLetterReason#MISSING_MESSAGE_ID}).
     *
     * @throws InvalidKeyException if the record carries an id that cannot be one (dead-lettered as
     *     {@link io.retrysafe.inbox.DeadLetterReason#INVALID_MESSAGE_ID})
     */
    String idOf(ConsumerRecord<?, ?> record);

    /** The {@value #DEFAULT_HEADER} header. */
    static MessageIds defaultHeader() {
        return header(DEFAULT_HEADER);
    }

    /**
     * The value of header {@code name}, decoded as UTF-8. No such header (or one with a null value)
     * is no id; the header twice is {@link Rule#MULTIPLE_VALUES}, bytes that are not UTF-8
     * {@link Rule#MALFORMED}.
     */
    static MessageIds header(String name) {
        Require.notBlank(name, "name");
        return new MessageIds() {
            @Override
            public String idOf(ConsumerRecord<?, ?> record) {
                List<byte[]> values = StreamSupport.stream(record.headers().headers(name).spliterator(), false)
                        .map(Header::value).filter(Objects::nonNull).toList();
                if (values.isEmpty()) {
                    return null;
                }
                if (values.size() > 1) {
                    throw new InvalidKeyException(Rule.MULTIPLE_VALUES,
                            "header " + name + " must have one value, but had " + values.size());
                }
                try {
                    return StandardCharsets.UTF_8.newDecoder()
                            .onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(values.get(0))).toString();
                } catch (CharacterCodingException e) {
                    throw new InvalidKeyException(Rule.MALFORMED, "header " + name + " is not UTF-8");
                }
            }

            @Override
            public String toString() {
                return "header(" + name + ")";
            }
        };
    }

    /** The CloudEvents id: header {@value #CLOUDEVENTS_ID_HEADER} (binary content mode; in structured mode the id is in the value). */
    static MessageIds cloudEventsId() {
        return header(CLOUDEVENTS_ID_HEADER);
    }

    /**
     * {@code <partition>@<offset>} (the scope names the topic), for producers that set no id. It
     * catches redeliveries (a crash before the offset commit, a rebalance), <b>not producer
     * duplicates</b>: a retried send is a new record at a new offset. Nor does it survive a topic
     * deleted and created again: its offsets start over, and its records pass for processed ones.
     */
    static MessageIds topicPartitionOffset() {
        return new MessageIds() {
            @Override
            public String idOf(ConsumerRecord<?, ?> record) {
                return record.partition() + "@" + record.offset();
            }

            @Override
            public String toString() {
                return "topicPartitionOffset";
            }
        };
    }
}
