package io.retrysafe.inbox.tck;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The contract of an adapter whose broker delivers the messages of one ordering key in the order
 * they were published (a Kafka partition, a RabbitMQ queue with one consumer): a retry does not let
 * the messages behind it overtake it.
 */
public abstract non-sealed class OrderedInboxContract extends InboxContract {

    @Test
    void messagesOfOneOrderingKeyTakeEffectInPublishOrderEvenAcrossRetries() throws Exception {
        List<String> payloads = new ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            String payload = i == 2 ? FAIL + "2:order 2" : "order " + i;
            payloads.add(payload);
            channel.publish(TestMessage.of(id(), payload).withOrderingKey("customer-1"));
        }
        consume();

        awaitResults(6);

        assertThat(effects()).extracting(Effects.Row::payload).containsExactlyElementsOf(payloads);
        assertThat(effects().get(1).attempt()).isEqualTo(3);
    }
}
