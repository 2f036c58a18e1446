package io.retrysafe.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.IdempotencyKey;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The parts of the inbox that need no database: the payload rule, the headers, the inputs' checks. */
class InboxTest {

    @Test
    void theStandardPayloadRuleKnowsBytesTextBuffersAndNoBody() throws Exception {
        ByteBuffer buffer = ByteBuffer.wrap("abc".getBytes(StandardCharsets.UTF_8));

        assertThat(PayloadBytes.STANDARD.bytes(new byte[] {1, 2})).containsExactly(1, 2);
        assertThat(PayloadBytes.STANDARD.bytes("é")).containsExactly(0xc3 - 256, 0xa9 - 256);
        assertThat(PayloadBytes.STANDARD.bytes(buffer)).isEqualTo("abc".getBytes(StandardCharsets.UTF_8));
        assertThat(buffer.remaining()).isEqualTo(3);
        assertThat(PayloadBytes.STANDARD.bytes(null)).isEmpty();
        assertThatThrownBy(() -> PayloadBytes.STANDARD.bytes(42))
                .isInstanceOf(PayloadBytes.UnreadablePayloadException.class)
                .hasMessageContaining("java.lang.Integer");
    }

    @Test
    void headersCarryTheSameNamesForEveryBrokerAndCutTheErrorAtTheLimit() {
        Delivery delivery = new Delivery("nats:orders:shipping", "id-1", "x", "stream sequence 42", 5);
        String longMessage = "x".repeat(2 * DeadLetterHeaders.MAX_ERROR_LENGTH);

        Map<String, String> headers = DeadLetterHeaders.of(delivery, DeadLetterReason.HANDLER_FAILED, 5,
                DeadLetterHeaders.describe(new IllegalStateException(longMessage)));

        assertThat(headers).containsOnlyKeys(DeadLetterHeaders.NAMES);
        assertThat(headers.get(DeadLetterHeaders.ERROR)).hasSize(DeadLetterHeaders.MAX_ERROR_LENGTH)
                .startsWith("java.lang.IllegalStateException: xxx");
        assertThat(headers).containsEntry(DeadLetterHeaders.DELIVERY_COUNT, "5")
                .containsEntry(DeadLetterHeaders.SCOPE, "nats:orders:shipping");
    }

    @Test
    void headerValuesAreStableLowerCaseWithHyphens() {
        assertThat(DeadLetterReason.UNREADABLE_PAYLOAD.headerValue()).isEqualTo("unreadable-payload");
        assertThat(RetryReason.DEAD_LETTER_FAILED.tagValue()).isEqualTo("dead-letter-failed");
    }

    @Test
    void aScopeLongerThanAStoreAcceptsIsRefusedWithItsLength() {
        String longName = "g".repeat(IdempotencyKey.MAX_SCOPE_LENGTH);

        assertThat(Inbox.scope("kafka", "shipping", "orders")).isEqualTo("kafka:shipping:orders");
        assertThatThrownBy(() -> Inbox.scope("kafka", longName, "orders"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most");
        assertThatThrownBy(() -> Delivery.of(longName + "x", "id", null, "p"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most");
    }

    @Test
    void aDeliveryNeverShowsItsIdOrPayload() {
        Delivery delivery = Delivery.of("kafka:g:t", "secret-id", "secret-body", "t-0@1");

        assertThat(delivery.toString()).doesNotContain("secret").contains("t-0@1");
        assertThatThrownBy(() -> new Delivery("kafka:g:t", "id", null, "p", -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("but was -1");
    }
}
