package io.retrysafe.inbox.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Backoff;
import io.retrysafe.KeyRules;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.PayloadBytes;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The contract every broker adapter of the inbox passes, on a real broker and a real database: the
 * same inputs give the same effects, results and dead letters on every transport. An adapter's test
 * extends {@link OrderedInboxContract} if its broker delivers the messages of one ordering key in
 * order (a Kafka partition), {@link UnorderedInboxContract} if not; each adds what only its kind can
 * pass, so no test is ever skipped:
 *
 * <pre>{@code
 * class KafkaInboxContractIT extends OrderedInboxContract {
 *     protected InboxHarness harness() { return harness; }
 * }
 * }</pre>
 *
 * <p>Every test works on a channel of its own; tests never sleep, they await a condition with a bound.
 */
public abstract sealed class InboxContract permits OrderedInboxContract, UnorderedInboxContract {
    /** Bound for anything the contract awaits: a broker round trip, a child JVM's start, a rebalance. */
    protected static final Duration AWAIT = Duration.ofSeconds(90);
    /** The handler's back-off: short, fixed, so the contract can check the wait's lower bound. */
    static final Backoff BACKOFF = Backoff.fixed(Duration.ofMillis(150));
    static final int MAX_ATTEMPTS = 3;
    /** A payload beginning with this cannot be had as bytes: the spec's payload-bytes function throws. */
    static final String UNREADABLE = "unreadable:";
    static final String FAIL = "fail:";
    static final String TRACE_HEADER = "x-contract-trace";

    /** The adapter's harness; may be the same instance for every test. */
    protected abstract InboxHarness harness();

    InboxHarness.Channel channel;
    final List<InboxResult> results = Collections.synchronizedList(new ArrayList<>());
    final List<String> resultPositions = Collections.synchronizedList(new ArrayList<>());
    /** Every run of the contract's handler, in the order they began. */
    final List<Run> runs = Collections.synchronizedList(new ArrayList<>());
    private final List<AutoCloseable> running = new ArrayList<>();

    @BeforeEach
    void openChannel() throws Exception {
        Effects.createTable(harness().dataSource());
        channel = harness().channel("contract-" + UUID.randomUUID().toString().substring(0, 8));
    }

    @AfterEach
    void closeChannel() throws Exception {
        for (int i = running.size() - 1; i >= 0; i--) {
            running.get(i).close();
        }
        if (channel != null) {
            channel.close();
        }
    }

    /** Starts a consumer with the contract's handler: it writes an effect, and throws for payloads starting with {@value #FAIL}. */
    final void consume() throws Exception {
        String scope = channel.scope();
        ContractHandler handler = (payload, connection, attempt) -> {
            String text = new String(payload, StandardCharsets.UTF_8);
            runs.add(new Run(text, attempt.number(), System.nanoTime()));
            Effects.insert(connection, scope, payload, "contract", attempt);
            if (text.startsWith(FAIL)) {
                int failures = Integer.parseInt(text.substring(FAIL.length(), text.indexOf(':', FAIL.length())));
                if (attempt.number() <= failures) {
                    throw new IllegalStateException("contract failure " + attempt.number() + " of " + failures);
                }
            }
        };
        PayloadBytes payloadBytes = payload -> {
            byte[] bytes = PayloadBytes.STANDARD.bytes(payload);
            if (new String(bytes, StandardCharsets.UTF_8).startsWith(UNREADABLE)) {
                throw new IllegalArgumentException("the contract's payload-bytes function refuses this payload");
            }
            return bytes;
        };
        InboxListener listener = new InboxListener() {
            @Override
            public void onResult(Delivery delivery, InboxResult result) {
                results.add(result);
                resultPositions.add(delivery.position());
            }
        };
        running.add(channel.consume(new ConsumerSpec(handler, MAX_ATTEMPTS, BACKOFF, payloadBytes, listener)));
    }

    final List<Effects.Row> effects() throws Exception {
        return Effects.rows(harness().dataSource(), channel.scope());
    }

    final List<ReceivedMessage> awaitDeadLetters(int count) {
        List<List<ReceivedMessage>> seen = new ArrayList<>();
        await().atMost(AWAIT).until(() -> {
            List<ReceivedMessage> now = channel.deadLetters();
            seen.add(0, now);
            return now.size() >= count;
        });
        return seen.get(0);
    }

    final void awaitResults(int count) {
        await().atMost(AWAIT).until(() -> results.size() >= count);
    }

    /** The headers every dead letter carries, whatever the broker. */
    final void assertDeadLetter(ReceivedMessage deadLetter, TestMessage original, DeadLetterReason reason,
            int attempts) {
        assertThat(deadLetter.payload()).isEqualTo(original.payload());
        assertThat(deadLetter.headers()).containsAllEntriesOf(original.headers())
                .containsEntry(DeadLetterHeaders.REASON, reason.headerValue())
                .containsEntry(DeadLetterHeaders.ATTEMPTS, Integer.toString(attempts))
                .containsEntry(DeadLetterHeaders.SCOPE, channel.scope())
                .containsKeys(DeadLetterHeaders.POSITION, DeadLetterHeaders.ERROR);
        assertThat(deadLetter.headers().get(DeadLetterHeaders.POSITION)).isNotBlank();
        assertThat(deadLetter.headers().get(DeadLetterHeaders.ERROR)).hasSizeLessThanOrEqualTo(
                DeadLetterHeaders.MAX_ERROR_LENGTH).doesNotContain("\n");
        if (original.id() != null) {
            assertThat(deadLetter.headers()).containsEntry(DeadLetterHeaders.MESSAGE_ID, original.id());
        } else {
            assertThat(deadLetter.headers()).doesNotContainKey(DeadLetterHeaders.MESSAGE_ID);
        }
    }

    /** One run of the contract's handler. */
    record Run(String payload, int attempt, long startedNanos) {
    }

    static String id() {
        return "msg-" + UUID.randomUUID();
    }

    @Test
    void aMessagePublishedTwiceTakesEffectOnceAndTheSecondIsReplayed() throws Exception {
        String id = id();
        channel.publish(TestMessage.of(id, "ship 1"));
        channel.publish(TestMessage.of(id, "ship 1"));
        consume();

        awaitResults(2);

        assertThat(results).hasSize(2).first().isInstanceOf(InboxResult.Processed.class);
        assertThat(results.get(1)).isEqualTo(new InboxResult.Replayed(resultPositions.get(0)));
        assertThat(effects()).extracting(Effects.Row::payload).containsExactly("ship 1");
        assertThat(channel.deadLetters()).isEmpty();
    }

    @Test
    void aRedeliveryAfterACrashBetweenCommitAndAcknowledgementIsReplayedNotRunAgain() throws Exception {
        channel.publish(TestMessage.of(id(), "ship 2"));
        try (InboxHarness.DyingConsumer child = channel.consumeInChildJvm()) {
            child.awaitCommitted(AWAIT);
            assertThat(effects()).containsExactly(new Effects.Row("ship 2", Effects.CHILD, 1));
            child.kill();
        }

        consume();
        awaitResults(1);

        assertThat(results.get(0)).isInstanceOf(InboxResult.Replayed.class);
        assertThat(effects()).containsExactly(new Effects.Row("ship 2", Effects.CHILD, 1));
    }

    @Test
    void aReusedIdWithAnotherPayloadIsRefusedAndDeadLettered() throws Exception {
        String id = id();
        TestMessage reused = TestMessage.of(id, "ship 4").withHeader(TRACE_HEADER, "t-reused");
        channel.publish(TestMessage.of(id, "ship 3"));
        channel.publish(reused);
        consume();

        List<ReceivedMessage> deadLetters = awaitDeadLetters(1);

        assertThat(deadLetters).hasSize(1);
        assertDeadLetter(deadLetters.get(0), reused, DeadLetterReason.FINGERPRINT_MISMATCH, 0);
        assertThat(effects()).extracting(Effects.Row::payload).containsExactly("ship 3");
    }

    @Test
    void aFailingHandlerIsRetriedWithBackoffThenDeadLetteredWithTheCommonHeaders() throws Exception {
        TestMessage failing = TestMessage.of(id(), FAIL + "99:ship 5").withHeader(TRACE_HEADER, "t-failing");
        channel.publish(failing);
        channel.publish(TestMessage.of(id(), "ship 6"));
        consume();

        List<ReceivedMessage> deadLetters = awaitDeadLetters(1);
        awaitResults(2);

        assertDeadLetter(deadLetters.get(0), failing, DeadLetterReason.HANDLER_FAILED, MAX_ATTEMPTS);
        assertThat(deadLetters.get(0).headers().get(DeadLetterHeaders.ERROR))
                .isEqualTo("java.lang.IllegalStateException: contract failure 3 of 99");
        List<Run> failingRuns = runs.stream().filter(r -> r.payload().equals(failing.payloadText())).toList();
        assertThat(failingRuns).extracting(Run::attempt).containsExactly(1, 2, 3);
        for (int retry = 1; retry < MAX_ATTEMPTS; retry++) {
            assertThat(Duration.ofNanos(failingRuns.get(retry).startedNanos() - failingRuns.get(retry - 1).startedNanos()))
                    .as("the wait before retry %d", retry).isGreaterThanOrEqualTo(BACKOFF.cap(retry));
        }
        // Every failed attempt rolled back; the message behind it went on.
        assertThat(effects()).extracting(Effects.Row::payload).containsExactly("ship 6");
    }

    @Test
    void aMessageWithoutAnIdIsDeadLetteredAtOnceAndTheNextOneIsProcessed() throws Exception {
        assertPoison(TestMessage.of(null, "ship 7"), DeadLetterReason.MISSING_MESSAGE_ID);
    }

    @Test
    void aMessageWithAnInvalidIdIsDeadLetteredAtOnceAndTheNextOneIsProcessed() throws Exception {
        assertPoison(TestMessage.of("x".repeat(KeyRules.DEFAULT.maxLength() + 1), "ship 8"),
                DeadLetterReason.INVALID_MESSAGE_ID);
    }

    @Test
    void aPayloadThatCannotBeFingerprintedIsDeadLetteredAtOnceAndTheNextOneIsProcessed() throws Exception {
        assertPoison(TestMessage.of(id(), UNREADABLE + "ship 9"), DeadLetterReason.UNREADABLE_PAYLOAD);
    }

    private void assertPoison(TestMessage poison, DeadLetterReason reason) throws Exception {
        TestMessage traced = poison.withHeader(TRACE_HEADER, "t-poison");
        channel.publish(traced);
        channel.publish(TestMessage.of(id(), "after the poison"));
        consume();

        List<ReceivedMessage> deadLetters = awaitDeadLetters(1);
        awaitResults(2);

        assertDeadLetter(deadLetters.get(0), traced, reason, 0);
        assertThat(results.get(0)).isInstanceOfSatisfying(InboxResult.DeadLetter.class,
                d -> assertThat(d.reason()).isEqualTo(reason));
        assertThat(effects()).extracting(Effects.Row::payload).containsExactly("after the poison");
        assertThat(runs).extracting(Run::payload).containsExactly("after the poison");
    }
}
