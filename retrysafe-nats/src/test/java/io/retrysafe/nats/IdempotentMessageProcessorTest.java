package io.retrysafe.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** Configuration and the pure parts of the processor; everything that talks to a server is in the *IT classes. */
class IdempotentMessageProcessorTest {
    private static final MessageHandler NOTHING = (msg, c, attempt) -> {
    };

    /** A store that never connects in these tests: building the processor must not touch the database. */
    private static RetrySafe engine() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL("jdbc:postgresql://127.0.0.1:1/never");
        return RetrySafe.builder(JdbcIdempotencyStore.builder(ds).dialect(JdbcDialect.POSTGRESQL).build()).build();
    }

    @Test
    void defaults() {
        IdempotentMessageProcessor p = IdempotentMessageProcessor.builder(engine(), NOTHING).build();
        assertThat(p.maxDeliver()).isEqualTo(IdempotentMessageProcessor.DEFAULT_MAX_DELIVER).isEqualTo(5);
        assertThat(p.retryBackoff()).isEqualTo(Duration.ofSeconds(1));
        assertThat(p.maxRetryBackoff()).isEqualTo(Duration.ofMinutes(1));
        assertThat(p.inProgressDelay()).isEqualTo(Duration.ofMillis(500));
        assertThat(p.deadLetterSubject()).isEmpty();
        assertThat(p.messageIds()).hasToString("header(Nats-Msg-Id)");
        assertThat(p.engine().policy().outcomePolicy().decide(io.retrysafe.StoredResponse.of(500, new byte[0])))
                .as("every result is stored: it was committed with the handler's writes")
                .isEqualTo(io.retrysafe.OutcomePolicy.Decision.STORE);
    }

    @Test
    void anEngineAlreadyInTransactionalModeIsAcceptedToo() {
        RetrySafe engine = engine();
        IdempotentMessageProcessor p = IdempotentMessageProcessor.builder(TransactionalRetrySafe.of(engine), NOTHING)
                .build();
        assertThat(p.engine().name()).isEqualTo(engine.name());
        assertThat(p.engine().store()).isSameAs(engine.store());
    }

    @Test
    void retryDelayDoublesPerDeliveryUpToTheMaximum() {
        IdempotentMessageProcessor p = IdempotentMessageProcessor.builder(engine(), NOTHING)
                .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(1)).build();
        assertThat(p.retryDelay(1)).isEqualTo(Duration.ofMillis(100));
        assertThat(p.retryDelay(2)).isEqualTo(Duration.ofMillis(200));
        assertThat(p.retryDelay(4)).isEqualTo(Duration.ofMillis(800));
        assertThat(p.retryDelay(5)).isEqualTo(Duration.ofSeconds(1));
        assertThat(p.retryDelay(Long.MAX_VALUE)).isEqualTo(Duration.ofSeconds(1));
        assertThat(p.retryDelay(0)).as("a count the server never sends").isEqualTo(Duration.ofMillis(100));
    }

    @Test
    void theEngineMustBeTransactionalOnAJdbcStore() {
        assertThatThrownBy(() -> IdempotentMessageProcessor.builder(
                RetrySafe.builder(new InMemoryIdempotencyStore()).build(), NOTHING))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("JdbcIdempotencyStore");
        PGSimpleDataSource ds = new PGSimpleDataSource();
        RetrySafe failOpen = RetrySafe.builder(JdbcIdempotencyStore.builder(ds).dialect(JdbcDialect.POSTGRESQL)
                .build()).failOpen(true).build();
        assertThatThrownBy(() -> IdempotentMessageProcessor.builder(failOpen, NOTHING))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fail open");
    }

    @Test
    void settersCheckTheirArgumentsAndRefuseASecondValue() {
        IdempotentMessageProcessor.Builder b = IdempotentMessageProcessor.builder(engine(), NOTHING);
        assertThatThrownBy(() -> b.maxDeliver(0)).hasMessage("maxDeliver must be between 1 and 2147483647, but was 0");
        assertThatThrownBy(() -> b.retryBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .hasMessage("retryBackoff max must not be less than initial, but was initial=PT2S, max=PT1S");
        assertThatThrownBy(() -> b.retryBackoff(Duration.ZERO, Duration.ofSeconds(1)))
                .hasMessage("retryBackoff initial must be positive, but was PT0S");
        assertThatThrownBy(() -> b.inProgressDelay(Duration.ofMillis(-1))).hasMessageContaining("but was PT-0.001S");
        assertThatThrownBy(() -> b.deadLetter(null, "dlq")).isInstanceOf(NullPointerException.class);
        b.maxDeliver(3);
        assertThatThrownBy(() -> b.maxDeliver(4)).isInstanceOf(IllegalStateException.class)
                .hasMessage("maxDeliver was already set to 3");
    }

    @Test
    void theDeadLetterSubjectMustBeAPlainSubject() {
        IdempotentMessageProcessor.Builder b = IdempotentMessageProcessor.builder(engine(), NOTHING);
        io.nats.client.JetStream js = (io.nats.client.JetStream) java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {io.nats.client.JetStream.class}, (proxy, m, args) -> {
                    throw new UnsupportedOperationException(m.getName());
                });
        for (String bad : new String[] {"", "orders.*", "orders.>", "orders dlq", ".orders", "orders.", "a..b"}) {
            assertThatThrownBy(() -> b.deadLetter(js, bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("but was \"" + bad + "\"");
        }
        assertThat(b.deadLetter(js, "orders.dlq").build().deadLetterSubject()).contains("orders.dlq");
    }

    @Test
    void aMessageThatIsNotFromJetStreamIsRefused() {
        IdempotentMessageProcessor p = IdempotentMessageProcessor.builder(engine(), NOTHING).build();
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
    void deadLetterHeaderValuesAreOnePrintableLineOfBoundedLength() {
        assertThat(IdempotentMessageProcessor.headerValue("boom\r\nat line 2\tcol", 100)).isEqualTo("boom  at line 2 col");
        assertThat(IdempotentMessageProcessor.headerValue("caf\u00e9", 100)).isEqualTo("caf?");
        assertThat(IdempotentMessageProcessor.headerValue("x".repeat(5000), 1024)).hasSize(1024);
        assertThat(IdempotentMessageProcessor.headerValue("\n", 10)).isEqualTo("-");
    }

    @Test
    void reasonsAreSpelledInLowerCaseWithHyphensInTheDeadLetter() {
        assertThat(Disposition.Reason.RETRIES_EXHAUSTED.header()).isEqualTo("retries-exhausted");
        assertThat(Disposition.Reason.FINGERPRINT_MISMATCH.header()).isEqualTo("fingerprint-mismatch");
    }

    @Test
    void scopeNamesStreamAndConsumer() {
        assertThat(IdempotentMessageProcessor.scope("ORDERS", "billing")).isEqualTo("nats:ORDERS:billing");
    }
}
