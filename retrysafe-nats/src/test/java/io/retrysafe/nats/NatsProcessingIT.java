package io.retrysafe.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Message;
import io.nats.client.PublishOptions;
import io.nats.client.Subscription;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.ConsumerInfo;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.api.StreamInfoOptions;
import io.nats.client.impl.Headers;
import io.retrysafe.Backoff;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.IdempotencyKeys;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.Outcome;
import io.retrysafe.RetrySafe;
import io.retrysafe.inbox.DeadLetterHeaders;
import io.retrysafe.inbox.Inbox;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryStyle;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestNats;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The processor, the consumers and the publisher against the real NATS server (JetStream) and the
 * real PostgreSQL. One stream per class (memory storage, deleted afterwards); each test has its own
 * subject and durable consumer, hence its own scope in the inbox.
 */
class NatsProcessingIT {
    /** Long: these tests never wait for an acknowledgement to time out. */
    private static final Duration ACK_WAIT = Duration.ofSeconds(30);
    private static final Duration BOUND = Duration.ofSeconds(30);
    private static final Duration POLL = Duration.ofMillis(50);
    private static final Duration FETCH_TIMEOUT = Duration.ofSeconds(1);
    private static final String ORDER_ID = "Order-Id";

    private static Connection nats;
    private static JetStreamManagement jsm;
    private static JetStream js;
    private static String stream;
    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    private static RetrySafe engine;

    private final List<AutoCloseable> toClose = new ArrayList<>();
    /** The message ids the handler was called with, one entry per call. */
    private final List<String> handled = new CopyOnWriteArrayList<>();
    private final Recorder recorder = new Recorder();
    private String subject;
    private String durable;

    @BeforeAll
    static void setUp() throws Exception {
        nats = TestNats.connect("retrysafe-nats-processing-it");
        jsm = nats.jetStreamManagement();
        js = nats.jetStream();
        stream = TestNats.uniqueName("RS_NATS_IT");
        jsm.addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>")
                .storageType(StorageType.Memory).duplicateWindow(Duration.ofMinutes(2)).build());
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(Effects.STORE_TABLE).lockTimeout(Duration.ofSeconds(2))
                .build();
        store.createSchema();
        Effects.createTable(ds);
        engine = RetrySafe.builder(store).name("nats-it").build();
    }

    @AfterAll
    static void tearDown() throws Exception {
        if (nats != null) {
            try {
                if (stream != null) {
                    jsm.deleteStream(stream);
                }
            } finally {
                nats.close();
            }
        }
    }

    @BeforeEach
    void newSubjectAndConsumer() {
        String token = TestNats.uniqueName("T");
        subject = stream + "." + token;
        durable = "C_" + token;
    }

    @AfterEach
    void closeConsumers() throws Exception {
        Collections.reverse(toClose);
        for (AutoCloseable c : toClose) {
            c.close();
        }
    }

    @Test
    void sameKeyPublishedTwiceIsStoredOnceAndProcessedOnce() throws Exception {
        createPullConsumer(durable, -1);
        IdempotentPublisher publisher = IdempotentPublisher.builder(js).expectedStream(stream).build();
        String key = IdempotencyKeys.uuidV7();
        byte[] payload = "order 17: 3 books".getBytes(UTF_8);

        PublishAck first = publisher.publish(subject, key, payload);
        PublishAck retry = publisher.publish(subject, key, payload); // the producer's retry of the same intent

        assertThat(first.isDuplicate()).isFalse();
        assertThat(retry.isDuplicate()).as("the server dropped the retry").isTrue();
        assertThat(retry.getSeqno()).as("and answered with the first copy's sequence").isEqualTo(first.getSeqno());
        assertThat(messagesOn(stream, subject)).as("messages on the subject").isEqualTo(1);

        startPull(nats, processor(b -> b));
        awaitSettled(() -> recorder.all().size() == 1);

        assertThat(recorder.results()).containsExactly("processed 1");
        assertThat(handled).containsExactly(key);
        assertThat(Effects.ids(ds, scope())).containsExactly(key);
    }

    @Test
    void publisherRefusesAnInvalidKeyAndAMessageIdHeaderOfItsOwn() {
        IdempotentPublisher publisher = IdempotentPublisher.of(js);
        byte[] payload = "x".getBytes(UTF_8);

        assertThatThrownBy(() -> publisher.publish(subject, "", payload)).isInstanceOf(InvalidKeyException.class);
        assertThatThrownBy(() -> publisher.publish(subject, "k\u00e9y", payload))
                .isInstanceOf(InvalidKeyException.class).hasMessageContaining("printable ASCII");
        Headers headers = new Headers().put(MessageIds.NATS_MSG_ID, "other");
        assertThatThrownBy(() -> publisher.publish(subject, headers, "key-1", payload))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Nats-Msg-Id");
    }

    @Test
    void sameIdPublishedAfterTheDuplicateWindowIsDeliveredTwiceAndReplayed() throws Exception {
        // A stream of its own with a 100 ms duplicate window: a producer's retry that comes later is stored again.
        String shortWindow = TestNats.uniqueName("RS_NATS_DW");
        jsm.addStream(StreamConfiguration.builder().name(shortWindow).subjects(shortWindow + ".>")
                .storageType(StorageType.Memory).duplicateWindow(Duration.ofMillis(100)).build());
        try {
            String orders = shortWindow + ".orders";
            jsm.addOrUpdateConsumer(shortWindow, ConsumerConfiguration.builder().durable(durable)
                    .filterSubject(orders).deliverSubject(nats.createInbox()).ackPolicy(AckPolicy.Explicit)
                    .ackWait(ACK_WAIT).build());
            RetrySafeNatsConsumer push = RetrySafeNatsConsumer.push(nats, processor(b -> b))
                    .stream(shortWindow).durable(durable).closeTimeout(Duration.ofSeconds(10)).start();
            toClose.add(push);
            IdempotentPublisher publisher = IdempotentPublisher.builder(js).maxAttempts(1).build();
            String key = IdempotencyKeys.uuidV7();
            byte[] payload = "refund 9".getBytes(UTF_8);

            publisher.publish(orders, key, payload);
            await().atMost(BOUND).pollInterval(POLL).until(() -> recorder.all().size() == 1);
            // Publish the same id again until the server no longer drops it: the window has passed.
            await().atMost(BOUND).pollInterval(POLL).until(() -> !publisher.publish(orders, key, payload).isDuplicate());
            await().atMost(BOUND).pollInterval(POLL).until(() -> recorder.all().size() == 2
                    && settled(shortWindow, durable));

            assertThat(messagesOn(shortWindow, orders)).as("both copies are in the stream").isEqualTo(2);
            assertThat(recorder.all()).extracting(Recorder.Seen::streamSequence).doesNotHaveDuplicates();
            assertThat(recorder.results()).containsExactly("processed 1", "replayed");
            assertThat(handled).containsExactly(key);
            assertThat(Effects.ids(ds, NatsInbox.scope(shortWindow, durable))).containsExactly(key);
        } finally {
            closeConsumers();
            toClose.clear();
            jsm.deleteStream(shortWindow);
        }
    }

    @Test
    void twoCompetingConsumersOnOneDurablePullConsumerProcessEachOrderOnce() throws Exception {
        createPullConsumer(durable, -1);
        // The producer sets an order id of its own and sends every order twice; the server does not
        // deduplicate on that header, so both copies are stored and the two consumers race for them.
        Recorder first = new Recorder();
        Recorder second = new Recorder();
        Connection otherProcess = TestNats.connect("retrysafe-nats-processing-it-2");
        toClose.add(otherProcess);
        startPull(nats, NatsInbox.builder(inbox(engine, first, b -> b), recordingHandler())
                .messageIds(MessageIds.header(ORDER_ID)).deadLetters(js, deadLetters()).build());
        startPull(otherProcess, NatsInbox.builder(inbox(engine, second, b -> b), recordingHandler())
                .messageIds(MessageIds.header(ORDER_ID)).deadLetters(js, deadLetters()).build());
        // Both have a pull request waiting before anything is published, so both get messages.
        await().atMost(BOUND).pollInterval(Duration.ofMillis(10)).until(() -> consumerInfo(stream, durable)
                .getNumWaiting() >= 2);

        int orders = 20;
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < orders; i++) {
            String id = "order-" + i;
            ids.add(id);
            for (int copy = 0; copy < 2; copy++) {
                js.publish(subject, new Headers().put(ORDER_ID, id), ("order " + i).getBytes(UTF_8));
            }
        }
        awaitSettled(() -> first.count(InboxResult.Processed.class) + second.count(InboxResult.Processed.class) == orders
                && first.count(InboxResult.Replayed.class) + second.count(InboxResult.Replayed.class) == orders);

        assertThat(Effects.ids(ds, scope())).as("one effect per order").hasSize(orders)
                .containsExactlyInAnyOrderElementsOf(ids);
        assertThat(handled).hasSize(orders);
        List<String> all = new ArrayList<>(first.results());
        all.addAll(second.results());
        assertThat(all).as("a copy that found its twin in flight past the lock timeout waits, then replays")
                .filteredOn(r -> !r.startsWith("processed ") && !r.equals("replayed"))
                .allSatisfy(r -> assertThat(r).startsWith("retry-later in-progress "));
        assertThat(first.all()).as("the first consumer's share").isNotEmpty();
        assertThat(second.all()).as("the second consumer's share").isNotEmpty();
    }

    @Test
    void transientFailuresAreNakkedWithBackoffThenProcessedOnce() throws Exception {
        createPullConsumer(durable, -1);
        AtomicInteger failuresLeft = new AtomicInteger(2);
        Inbox inbox = inbox(engine, recorder, b -> b.maxAttempts(5)
                .backoff(Backoff.exponential(Duration.ofMillis(200), Duration.ofSeconds(5))));
        NatsInbox processor = NatsInbox.builder(inbox, (msg, c, attempt) -> {
            handled.add(attempt.key().value());
            Effects.record(c, msg, attempt); // rolled back with the failed attempt
            if (failuresLeft.getAndDecrement() > 0) {
                throw new IOException("the warehouse database is restarting (test)");
            }
        }).messageIds(MessageIds.streamSequence()).deadLetters(js, deadLetters()).build();
        PublishAck published = js.publish(subject, "ship order 5".getBytes(UTF_8)); // no id: the sequence is the id
        String id = Long.toString(published.getSeqno());

        startPull(nats, processor);
        awaitSettled(() -> recorder.count(InboxResult.Processed.class) == 1);

        assertThat(recorder.results()).as("nakked with the back-off's delay for each delivery; attempt n is delivery n")
                .containsExactly("retry-later handler-failed PT0.2S", "retry-later handler-failed PT0.4S",
                        "processed 3");
        assertThat(recorder.all()).extracting(Recorder.Seen::delivered).containsExactly(1L, 2L, 3L);
        assertThat(handled).containsExactly(id, id, id);
        assertThat(Effects.ids(ds, scope())).as("the failed attempts' writes were rolled back").containsExactly(id);
        assertThat(store.inspect(IdempotencyKey.of(scope(), id))).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.attempt()).isEqualTo(1);
        });
    }

    @Test
    void poisonMessageIsDeadLetteredAfterMaxDeliverAndLaterMessagesAreProcessed() throws Exception {
        createPullConsumer(durable, -1);
        String deadLetters = deadLetters();
        Inbox inbox = inbox(engine, recorder, b -> b.maxAttempts(3)
                .backoff(Backoff.exponential(Duration.ofMillis(100), Duration.ofSeconds(1))));
        NatsInbox processor = NatsInbox.builder(inbox, (msg, c, attempt) -> {
            handled.add(attempt.key().value());
            Effects.record(c, msg, attempt);
            if (new String(msg.getData(), UTF_8).startsWith("poison")) {
                // A line break and a character NATS refuses in a header value: the dead letter is still published.
                throw new IllegalStateException("cannot parse order\r\n(test) \u00e9");
            }
        }).deadLetters(js, deadLetters).build();
        IdempotentPublisher publisher = IdempotentPublisher.of(js);
        String poisonId = IdempotencyKeys.uuidV7();
        byte[] poison = "poison {".getBytes(UTF_8);
        long poisonSeq = publisher.publish(subject, new Headers().put("Tenant", "acme"), poisonId, poison).getSeqno();
        List<String> good = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String id = IdempotencyKeys.uuidV7();
            good.add(id);
            publisher.publish(subject, id, ("order " + i).getBytes(UTF_8));
        }

        startPull(nats, processor);
        awaitSettled(() -> recorder.count(InboxResult.DeadLetter.class) == 1
                && recorder.count(InboxResult.Processed.class) == 3);

        assertThat(recorder.resultsOf(poisonSeq)).containsExactly("retry-later handler-failed PT0.1S",
                "retry-later handler-failed PT0.2S", "dead-letter handler-failed 3");
        assertThat(Effects.ids(ds, scope())).containsExactlyInAnyOrderElementsOf(good);
        assertThat(handled).filteredOn(poisonId::equals).hasSize(3);

        assertThat(messagesOn(stream, deadLetters)).isEqualTo(1);
        MessageInfo dead = jsm.getLastMessage(stream, deadLetters);
        assertThat(dead.getData()).isEqualTo(poison);
        Headers h = dead.getHeaders();
        assertThat(h.getFirst(DeadLetterHeaders.REASON)).isEqualTo("handler-failed");
        assertThat(h.getFirst(DeadLetterHeaders.ERROR))
                .isEqualTo("java.lang.IllegalStateException: cannot parse order (test) ?");
        assertThat(h.getFirst(DeadLetterHeaders.ATTEMPTS)).isEqualTo("3");
        assertThat(h.getFirst(DeadLetterHeaders.SCOPE)).isEqualTo(scope());
        assertThat(h.getFirst(DeadLetterHeaders.POSITION)).isEqualTo(stream + "#" + poisonSeq);
        assertThat(h.getFirst(DeadLetterHeaders.DELIVERY_COUNT)).isEqualTo("3");
        assertThat(h.getFirst(DeadLetterHeaders.MESSAGE_ID)).isEqualTo(poisonId);
        assertThat(h.getFirst("Tenant")).as("the producer's own headers are kept").isEqualTo("acme");
        assertThat(h.getFirst(MessageIds.NATS_MSG_ID)).as("the dead letter's own id").isNotEqualTo(poisonId);
    }

    @Test
    void idReusedWithAnotherPayloadIsTerminatedAsAProducerBugAndCounted() throws Exception {
        createPullConsumer(durable, -1);
        AtomicInteger mismatches = new AtomicInteger();
        RetrySafe counting = RetrySafe.builder(store).name("nats-it-counting").listener(new RetrySafeListener() {
            @Override
            public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
                if (outcome instanceof Outcome.FingerprintMismatch) {
                    mismatches.incrementAndGet();
                }
            }
        }).build();
        String deadLetters = deadLetters();
        NatsInbox processor = NatsInbox.builder(inbox(counting, recorder, b -> b),
                recordingHandler()).messageIds(MessageIds.header(ORDER_ID)).deadLetters(js, deadLetters).build();
        js.publish(subject, new Headers().put(ORDER_ID, "order-1"), "amount 100".getBytes(UTF_8));
        js.publish(subject, new Headers().put(ORDER_ID, "order-1"), "amount 999".getBytes(UTF_8));

        startPull(nats, processor);
        awaitSettled(() -> recorder.all().size() == 2);

        assertThat(recorder.results()).containsExactly("processed 1", "dead-letter fingerprint-mismatch 0");
        assertThat(Effects.payloads(ds, scope())).containsExactly("amount 100");
        assertThat(mismatches).hasValue(1);
        MessageInfo dead = jsm.getLastMessage(stream, deadLetters);
        assertThat(dead.getHeaders().getFirst(DeadLetterHeaders.REASON)).isEqualTo("fingerprint-mismatch");
        assertThat(dead.getHeaders().getFirst(DeadLetterHeaders.MESSAGE_ID)).isEqualTo("order-1");
        assertThat(new String(dead.getData(), UTF_8)).isEqualTo("amount 999");
    }

    @Test
    void messagesWithoutAValidIdAreTerminatedAndNeverProcessedUnprotected() throws Exception {
        createPullConsumer(durable, -1);
        AtomicInteger invalidKeys = new AtomicInteger();
        RetrySafe counting = RetrySafe.builder(store).name("nats-it-invalid").listener(new RetrySafeListener() {
            @Override
            public void onInvalidKey(InvalidKeyException error) {
                invalidKeys.incrementAndGet();
            }
        }).build();
        // Each is terminated once its dead letter is stored; the server also publishes an advisory.
        Subscription advisories = nats.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED." + stream + "." + durable);
        nats.flush(BOUND);
        long noIdSeq = js.publish(subject, "no id".getBytes(UTF_8)).getSeqno();
        js.publish(subject, "id too long".getBytes(UTF_8), PublishOptions.builder().messageId("x".repeat(256)).build());
        String valid = IdempotencyKeys.uuidV7();
        IdempotentPublisher.of(js).publish(subject, valid, "with id".getBytes(UTF_8));
        IdempotentPublisher.of(js).publish(subject, IdempotencyKeys.uuidV7(), "unreadable id".getBytes(UTF_8));
        MessageIds failingOnOne = msg -> {
            if (new String(msg.getData(), UTF_8).equals("unreadable id")) {
                throw new IllegalStateException("the id extractor broke (test)");
            }
            return MessageIds.natsMsgId().idOf(msg);
        };

        startPull(nats, NatsInbox.builder(inbox(counting, recorder, b -> b), recordingHandler())
                .messageIds(failingOnOne).deadLetters(js, deadLetters()).build());
        awaitSettled(() -> recorder.all().size() == 4);

        assertThat(recorder.results()).containsExactly("dead-letter missing-message-id 0",
                "dead-letter invalid-message-id 0", "processed 1", "dead-letter invalid-message-id 0");
        assertThat(handled).containsExactly(valid);
        assertThat(invalidKeys).hasValue(3);
        assertThat(messagesOn(stream, deadLetters())).as("the three given up, stored before they were terminated")
                .isEqualTo(3);
        Message advisory = advisories.nextMessage(BOUND);
        assertThat(advisory).as("the MSG_TERMINATED advisory within %s", BOUND).isNotNull();
        assertThat(new String(advisory.getData(), UTF_8)).contains("\"stream_seq\":" + noIdSeq);
        advisories.unsubscribe();
    }

    @Test
    void startRefusesConsumersTheProcessorCannotWorkWith() throws Exception {
        NatsInbox processor = NatsInbox.builder(
                inbox(engine, recorder, b -> b.maxAttempts(5)), recordingHandler())
                .deadLetters(js, deadLetters()).build();

        jsm.addOrUpdateConsumer(stream, ConsumerConfiguration.builder().durable(durable + "_NONE").filterSubject(subject)
                .ackPolicy(AckPolicy.None).build());
        assertThatThrownBy(() -> RetrySafeNatsConsumer.pull(nats, processor).stream(stream)
                .durable(durable + "_NONE").start()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("AckPolicy.Explicit").hasMessageEndingWith("but was none");

        createPullConsumer(durable + "_MAX", 2);
        assertThatThrownBy(() -> RetrySafeNatsConsumer.pull(nats, processor).stream(stream)
                .durable(durable + "_MAX").start()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("max_deliver").hasMessageEndingWith("but was 2");
        assertThatThrownBy(() -> RetrySafeNatsConsumer.push(nats, processor).stream(stream)
                .durable(durable + "_MAX").start()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is a pull consumer");
        assertThatThrownBy(() -> RetrySafeNatsConsumer.pull(nats, processor).stream(stream)
                .durable(durable + "_MISSING").start()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("does not exist");
    }

    // ---------------------------------------------------------------- helpers

    private MessageHandler recordingHandler() {
        return (msg, c, attempt) -> {
            handled.add(attempt.key().value());
            Effects.record(c, msg, attempt);
        };
    }

    /** A processor with the recording handler, on an inbox that reports to this test's recorder. */
    private NatsInbox processor(UnaryOperator<NatsInbox.Builder> custom) {
        return custom.apply(NatsInbox.builder(inbox(engine, recorder, b -> b), recordingHandler())
                .deadLetters(js, deadLetters())).build();
    }

    /** Where this test's dead letters go: a subject of the test stream that no test consumer reads. */
    private String deadLetters() {
        return stream + ".dlq." + durable;
    }

    /** An inbox retrying by redelivery, as a JetStream consumer's must. */
    static Inbox inbox(RetrySafe engine, Recorder recorder, UnaryOperator<Inbox.Builder> custom) {
        return custom.apply(Inbox.builder(TransactionalRetrySafe.of(engine)).retryStyle(RetryStyle.BROKER_REDELIVERY)
                .listener(recorder)).build();
    }

    private void createPullConsumer(String name, long maxDeliver) throws IOException, JetStreamApiException {
        jsm.addOrUpdateConsumer(stream, ConsumerConfiguration.builder().durable(name).filterSubject(subject)
                .ackPolicy(AckPolicy.Explicit).ackWait(ACK_WAIT).maxDeliver(maxDeliver).build());
    }

    private void startPull(Connection connection, NatsInbox processor) throws Exception {
        toClose.add(RetrySafeNatsConsumer.pull(connection, processor).stream(stream).durable(durable)
                .batchSize(5).fetchTimeout(FETCH_TIMEOUT).closeTimeout(Duration.ofSeconds(10)).start());
    }

    private String scope() {
        return NatsInbox.scope(stream, durable);
    }

    private static ConsumerInfo consumerInfo(String streamName, String consumer) throws Exception {
        return jsm.getConsumerInfo(streamName, consumer);
    }

    /** Nothing left to deliver and nothing delivered that is not acknowledged or terminated. */
    private static boolean settled(String streamName, String consumer) throws Exception {
        ConsumerInfo info = consumerInfo(streamName, consumer);
        return info.getNumPending() == 0 && info.getNumAckPending() == 0;
    }

    private void awaitSettled(Callable<Boolean> done) {
        await().atMost(BOUND).pollInterval(POLL).until(() -> done.call() && settled(stream, durable));
    }

    private static long messagesOn(String streamName, String onSubject) throws IOException, JetStreamApiException {
        return jsm.getStreamInfo(streamName, StreamInfoOptions.filterSubjects(onSubject)).getStreamState()
                .getSubjectMap().getOrDefault(onSubject, 0L);
    }

}
