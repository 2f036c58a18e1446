package io.retrysafe.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nats.client.JetStream;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.NatsMessage;
import io.retrysafe.Backoff;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The publisher's retries against a JetStream that fails on demand: the waits between attempts are
 * recorded, not slept, and are the back-off's.
 */
class IdempotentPublisherTest {
    private static final byte[] PAYLOAD = "order 17".getBytes(UTF_8);

    /** The Nats-Msg-Id of every publish the fake JetStream was asked for. */
    private final List<String> publishedIds = new ArrayList<>();
    private final List<Duration> waits = new ArrayList<>();

    @Test
    void defaults() {
        IdempotentPublisher publisher = IdempotentPublisher.of(jetStream(0));
        assertThat(publisher.maxAttempts()).isEqualTo(IdempotentPublisher.DEFAULT_MAX_ATTEMPTS).isEqualTo(3);
        assertThat(publisher.backoff()).isEqualTo(IdempotentPublisher.DEFAULT_BACKOFF)
                .isEqualTo(Backoff.fixed(Duration.ofMillis(200)));
    }

    @Test
    void aPublishWithoutAnAcknowledgementIsRetriedWithTheSameIdAfterTheBackoffsDelays() throws Exception {
        Backoff backoff = Backoff.exponential(Duration.ofMillis(100), Duration.ofMillis(150));
        IdempotentPublisher publisher = IdempotentPublisher.builder(jetStream(2)).maxAttempts(4).backoff(backoff)
                .pause(waits::add).build();

        PublishAck ack = publisher.publish("orders.created", "key-1", PAYLOAD);

        assertThat(ack.getSeqno()).isEqualTo(7);
        assertThat(publishedIds).containsExactly("key-1", "key-1", "key-1");
        assertThat(waits).as("the back-off's delays before retries 1 and 2")
                .containsExactly(Duration.ofMillis(100), Duration.ofMillis(150));
    }

    @Test
    void afterMaxAttemptsTheFirstFailureIsThrownWithTheOthersSuppressed() {
        IdempotentPublisher publisher = IdempotentPublisher.builder(jetStream(Integer.MAX_VALUE)).maxAttempts(3)
                .pause(waits::add).build();

        assertThatThrownBy(() -> publisher.publish("orders.created", "key-2", PAYLOAD))
                .isInstanceOf(IOException.class).hasMessage("no acknowledgement 1 (test)")
                .satisfies(e -> assertThat(e.getSuppressed()).extracting(Throwable::getMessage)
                        .containsExactly("no acknowledgement 2 (test)", "no acknowledgement 3 (test)"));
        assertThat(publishedIds).containsExactly("key-2", "key-2", "key-2");
        assertThat(waits).as("no wait after the last attempt").containsExactly(
                IdempotentPublisher.DEFAULT_BACKOFF.delay(1), IdempotentPublisher.DEFAULT_BACKOFF.delay(2));
    }

    @Test
    void settersCheckTheirArgumentsAndRefuseASecondValue() {
        IdempotentPublisher.Builder b = IdempotentPublisher.builder(jetStream(0));
        assertThatThrownBy(() -> b.maxAttempts(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxAttempts must be between 1 and 100, but was 0");
        assertThatThrownBy(() -> b.backoff(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("backoff must not be null");
        b.backoff(Backoff.fixed(Duration.ofMillis(50)));
        assertThatThrownBy(() -> b.backoff(IdempotentPublisher.DEFAULT_BACKOFF))
                .isInstanceOf(IllegalStateException.class).hasMessageStartingWith("backoff was already set to");
    }

    /** A JetStream whose first {@code failures} publishes get no acknowledgement; later ones are stored at sequence 7. */
    private JetStream jetStream(int failures) {
        AtomicInteger calls = new AtomicInteger();
        return (JetStream) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {JetStream.class},
                (proxy, method, args) -> {
                    if (!method.getName().equals("publish") || args == null || args.length != 4) {
                        throw new UnsupportedOperationException(method.getName());
                    }
                    publishedIds.add(((PublishOptions) args[3]).getMessageId());
                    int call = calls.incrementAndGet();
                    if (call <= failures) {
                        throw new IOException("no acknowledgement " + call + " (test)");
                    }
                    return new PublishAck(NatsMessage.builder().subject("_INBOX.test")
                            .data("{\"stream\":\"ORDERS\",\"seq\":7}".getBytes(UTF_8)).build());
                });
    }
}
