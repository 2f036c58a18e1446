package io.retrysafe.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nats.client.JetStream;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.lang.reflect.Proxy;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Configuration and the pure parts of the adapter; everything that talks to a server is in the *IT classes. */
class NatsInboxTest {
    private static final MessageHandler NOTHING = (msg, c, attempt) -> {
    };
    /** Never called here: nothing is dead-lettered in these tests. */
    private static final JetStream JS = (JetStream) Proxy.newProxyInstance(
            NatsInboxTest.class.getClassLoader(), new Class<?>[] {JetStream.class}, (proxy, m, args) -> {
                throw new UnsupportedOperationException(m.getName());
            });

    /** A store that never connects in these tests: building the processor must not touch the database. */
    private static Inbox.Builder inbox() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL("jdbc:postgresql://127.0.0.1:1/never");
        return Inbox.builder(TransactionalRetrySafe.of(RetrySafe.builder(
                JdbcIdempotencyStore.builder(ds).dialect(JdbcDialect.POSTGRESQL).build()).build()));
    }

    private static NatsInbox.Builder processor() {
        return NatsInbox.builder(inbox().retryStyle(RetryStyle.BROKER_REDELIVERY).build(), NOTHING);
    }

    @Test
    void defaults() {
        NatsInbox p = processor().deadLetters(JS, "orders.dlq").build();
        assertThat(p.deadLetterSubject()).isEqualTo("orders.dlq");
        assertThat(p.messageIds()).hasToString("header(Nats-Msg-Id)");
    }

    @Test
    void deadLettersAreRequired() {
        assertThatThrownBy(() -> processor().build()).isInstanceOf(IllegalStateException.class)
                .hasMessage("deadLetters must be set: a message given up must go somewhere, or it is only terminated "
                        + "and left in the stream where no consumer sees it again");
    }

    @Test
    void theInboxMustRetryByRedelivery() {
        assertThatThrownBy(() -> NatsInbox.builder(inbox().build(), NOTHING))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("retry style must be BROKER_REDELIVERY, but was IN_PROCESS");
    }

    @Test
    void settersCheckTheirArgumentsAndRefuseASecondValue() {
        NatsInbox.Builder b = processor();
        assertThatThrownBy(() -> b.deadLetters(null, "dlq")).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> b.messageIds(null)).isInstanceOf(NullPointerException.class);
        b.messageIds(MessageIds.streamSequence());
        assertThatThrownBy(() -> b.messageIds(MessageIds.natsMsgId())).isInstanceOf(IllegalStateException.class)
                .hasMessage("messageIds was already set to streamSequence");
    }

    @Test
    void theDeadLetterSubjectMustBeAPlainSubject() {
        NatsInbox.Builder b = processor();
        for (String bad : new String[] {"", "orders.*", "orders.>", "orders dlq", ".orders", "orders.", "a..b"}) {
            assertThatThrownBy(() -> b.deadLetters(JS, bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("but was \"" + bad + "\"");
        }
        assertThat(b.deadLetters(JS, "orders.dlq").build().deadLetterSubject()).isEqualTo("orders.dlq");
    }

    @Test
    void aMessageThatIsNotFromJetStreamIsRefused() {
        NatsInbox p = processor().deadLetters(JS, "orders.dlq").build();
        NatsMessage core = NatsMessage.builder().subject("orders").data("x".getBytes(UTF_8)).build();
        assertThatThrownBy(() -> p.process(core)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no JetStream ack subject");
    }

    @Test
    void messageIdsReadTheFirstValueOfTheirHeader() {
        NatsMessage msg = NatsMessage.builder().subject("orders")
                .headers(new Headers().add("Nats-Msg-Id", "id-1", "id-2").add("ce-id", "ce-7")).build();
        assertThat(MessageIds.natsMsgId().idOf(msg)).isEqualTo("id-1");
        assertThat(MessageIds.header("ce-id").idOf(msg)).isEqualTo("ce-7");
        assertThat(MessageIds.header("other").idOf(msg)).isNull();
        assertThat(MessageIds.natsMsgId().idOf(NatsMessage.builder().subject("orders").build())).isNull();
        assertThatThrownBy(() -> MessageIds.header("bad name")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was \"bad name\"");
    }

    @Test
    void theDeadLetterKeepsTheProducersHeadersAndTakesTheInboxsInPrintableAscii() {
        NatsMessage msg = NatsMessage.builder().subject("orders").headers(new Headers()
                .add("Nats-Msg-Id", "id-1").add("Nats-Expected-Stream", "ORDERS").add("Tenant", "acme")
                .add(DeadLetterHeaders.REASON, "handler-failed")).build();
        Map<String, String> inbox = new LinkedHashMap<>();
        inbox.put(DeadLetterHeaders.REASON, "fingerprint-mismatch");
        inbox.put(DeadLetterHeaders.ERROR, "java.lang.IllegalStateException: caf\u00e9\tbar");

        Headers headers = NatsInbox.deadLetterHeaders(msg, inbox);

        assertThat(headers.keySet()).containsExactlyInAnyOrder("Tenant", DeadLetterHeaders.REASON,
                DeadLetterHeaders.ERROR);
        assertThat(headers.get(DeadLetterHeaders.REASON)).as("a dead letter that failed again gets the new reason")
                .isEqualTo(List.of("fingerprint-mismatch"));
        assertThat(headers.getFirst(DeadLetterHeaders.ERROR)).isEqualTo("java.lang.IllegalStateException: caf? bar");
    }

    @Test
    void scopeNamesStreamAndConsumer() {
        assertThat(NatsInbox.scope("ORDERS", "billing")).isEqualTo("nats:ORDERS:billing");
    }
}
