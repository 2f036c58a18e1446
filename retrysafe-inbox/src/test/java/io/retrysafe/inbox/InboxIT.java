package io.retrysafe.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Backoff;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Engines;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The inbox on its own against a real PostgreSQL, with deliveries made by hand and dead letters
 * collected in a list: the results every broker adapter acts on, in both retry styles.
 */
class InboxIT {
    private static final String STORE_TABLE = "rs_inbox_it";
    private static final String EFFECTS = "rs_inbox_it_effects";
    /** Short, so that a held id answers "retry later" quickly. */
    private static final Duration LOCK_TIMEOUT = Duration.ofMillis(300);
    private static final Backoff FAST = Backoff.exponential(Duration.ofMillis(5), Duration.ofMillis(20));

    private static DataSource ds;
    private static TransactionalRetrySafe transactional;

    private final List<InboxResult.DeadLetter> deadLetters = Collections.synchronizedList(new ArrayList<>());
    private String scope;

    @BeforeAll
    static void database() throws SQLException {
        ds = TestDatabases.postgres();
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(ds).table(STORE_TABLE).lockTimeout(LOCK_TIMEOUT)
                .build();
        store.createSchema();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + EFFECTS + " (id bigserial PRIMARY KEY, scope text NOT NULL,"
                    + " message_id text, attempt int NOT NULL)");
        }
        transactional = TransactionalRetrySafe.of(RetrySafe.builder(store).name("inbox-it").build());
    }

    @AfterAll
    static void dropEffects() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("DELETE FROM " + EFFECTS);
        }
    }

    @BeforeEach
    void newScope() {
        scope = Inbox.scope("test", "group-" + UUID.randomUUID().toString().substring(0, 8), "orders");
    }

    private Inbox inbox(UnaryOperator<Inbox.Builder> options) {
        return options.apply(Inbox.builder(transactional).backoff(FAST)).build();
    }

    private Delivery delivery(String id, Object payload, long offset) {
        return Delivery.of(scope, id, payload, "orders-0@" + offset);
    }

    /** Writes one effect row; throws after writing on the attempts listed in {@code failOn}. */
    private InboxHandler writing(String id, int... failOn) {
        return (connection, attempt) -> {
            try (PreparedStatement ps = connection.prepareStatement("INSERT INTO " + EFFECTS
                    + " (scope, message_id, attempt) VALUES (?, ?, ?)")) {
                ps.setString(1, scope);
                ps.setString(2, id);
                ps.setInt(3, attempt.number());
                ps.executeUpdate();
            }
            for (int n : failOn) {
                if (n == attempt.number()) {
                    throw new IllegalStateException("failure on attempt " + n + "\nsecond line");
                }
            }
        };
    }

    private List<Integer> effects() throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT attempt FROM " + EFFECTS + " WHERE scope = ? ORDER BY id")) {
            ps.setString(1, scope);
            List<Integer> attempts = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    attempts.add(rs.getInt(1));
                }
            }
            return attempts;
        }
    }

    @Test
    void aRedeliveryIsReplayedWithThePositionThatProcessedIt() throws SQLException {
        Inbox inbox = inbox(UnaryOperator.identity());

        InboxResult first = inbox.process(delivery("m-1", "ship 1", 7), writing("m-1"), deadLetters::add);
        InboxResult again = inbox.process(delivery("m-1", "ship 1", 9), writing("m-1"), deadLetters::add);

        assertThat(first).isEqualTo(new InboxResult.Processed(1));
        assertThat(again).isEqualTo(new InboxResult.Replayed("orders-0@7"));
        assertThat(again.isDone()).isTrue();
        assertThat(effects()).containsExactly(1);
        assertThat(deadLetters).isEmpty();
    }

    @Test
    void inProcessRetriesRollBackEachFailedAttemptThenCommitTheOneThatWorks() throws SQLException {
        Inbox inbox = inbox(b -> b.maxAttempts(3));

        InboxResult result = inbox.process(delivery("m-2", "ship 2", 1), writing("m-2", 1, 2), deadLetters::add);

        assertThat(result).isEqualTo(new InboxResult.Processed(3));
        assertThat(effects()).containsExactly(3);
    }

    @Test
    void aHandlerThatKeepsFailingIsDeadLetteredWithItsLastErrorOnOneLine() throws SQLException {
        List<Integer> heard = Collections.synchronizedList(new ArrayList<>());
        Inbox inbox = inbox(b -> b.maxAttempts(2).listener(new InboxListener() {
            @Override
            public void onHandlerFailure(Delivery delivery, int attempt, Exception error) {
                heard.add(attempt);
            }
        }));

        InboxResult result = inbox.process(delivery("m-3", "ship 3", 4), writing("m-3", 1, 2), deadLetters::add);

        assertThat(result).isInstanceOf(InboxResult.DeadLetter.class);
        InboxResult.DeadLetter deadLetter = (InboxResult.DeadLetter) result;
        assertThat(deadLetter.reason()).isEqualTo(DeadLetterReason.HANDLER_FAILED);
        assertThat(deadLetter.attempts()).isEqualTo(2);
        assertThat(deadLetter.error()).isEqualTo("java.lang.IllegalStateException: failure on attempt 2 second line");
        assertThat(deadLetter.headers()).containsEntry(DeadLetterHeaders.REASON, "handler-failed")
                .containsEntry(DeadLetterHeaders.ATTEMPTS, "2")
                .containsEntry(DeadLetterHeaders.SCOPE, scope)
                .containsEntry(DeadLetterHeaders.POSITION, "orders-0@4")
                .containsEntry(DeadLetterHeaders.MESSAGE_ID, "m-3")
                .containsEntry(DeadLetterHeaders.ERROR, deadLetter.error())
                .doesNotContainKey(DeadLetterHeaders.DELIVERY_COUNT);
        assertThat(deadLetters).containsExactly(deadLetter);
        assertThat(heard).containsExactly(1, 2);
        assertThat(effects()).isEmpty();
    }

    @Test
    void brokerRedeliveryAsksForTheBackoffsDelayThenDeadLettersOnTheLastDelivery() throws SQLException {
        Backoff backoff = Backoff.exponential(Duration.ofSeconds(1), Duration.ofSeconds(30));
        Inbox inbox = Inbox.builder(transactional).retryStyle(RetryStyle.BROKER_REDELIVERY).maxAttempts(3)
                .backoff(backoff).build();
        Delivery first = delivery("m-4", "ship 4", 12).withDeliveryCount(1);

        InboxResult one = inbox.process(first, writing("m-4", 1, 2, 3), deadLetters::add);
        InboxResult two = inbox.process(first.withDeliveryCount(2), writing("m-4", 1, 2, 3), deadLetters::add);
        InboxResult three = inbox.process(first.withDeliveryCount(3), writing("m-4", 1, 2, 3), deadLetters::add);

        assertThat(one).isInstanceOfSatisfying(InboxResult.RetryLater.class, r -> {
            assertThat(r.reason()).isEqualTo(RetryReason.HANDLER_FAILED);
            assertThat(r.delay()).isEqualTo(Duration.ofSeconds(1));
        });
        assertThat(two).isInstanceOfSatisfying(InboxResult.RetryLater.class,
                r -> assertThat(r.delay()).isEqualTo(Duration.ofSeconds(2)));
        assertThat(three).isInstanceOfSatisfying(InboxResult.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo(DeadLetterReason.HANDLER_FAILED);
            assertThat(d.attempts()).isEqualTo(3);
            assertThat(d.headers()).containsEntry(DeadLetterHeaders.DELIVERY_COUNT, "3");
        });
        assertThat(effects()).isEmpty();
    }

    @Test
    void brokerRedeliveryProcessesALaterDeliveryOnceTheHandlerWorks() throws SQLException {
        Inbox inbox = inbox(b -> b.retryStyle(RetryStyle.BROKER_REDELIVERY));

        InboxResult result = inbox.process(delivery("m-5", "ship 5", 1).withDeliveryCount(2), writing("m-5", 1),
                deadLetters::add);

        assertThat(result).isEqualTo(new InboxResult.Processed(2));
        assertThat(effects()).containsExactly(2);
    }

    @Test
    void aPermanentFailureIsDeadLetteredWithoutAnotherAttempt() throws SQLException {
        Inbox inbox = inbox(b -> b.maxAttempts(5).permanentFailure(e -> e instanceof IllegalStateException));

        InboxResult result = inbox.process(delivery("m-6", "ship 6", 1), writing("m-6", 1), deadLetters::add);

        assertThat(result).isInstanceOfSatisfying(InboxResult.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo(DeadLetterReason.PERMANENT_FAILURE);
            assertThat(d.attempts()).isEqualTo(1);
        });
        assertThat(effects()).isEmpty();
    }

    @Test
    void aReusedIdWithAnotherPayloadIsDeadLetteredAndNotRun() throws SQLException {
        Inbox inbox = inbox(UnaryOperator.identity());
        inbox.process(delivery("m-7", "ship 7", 1), writing("m-7"), deadLetters::add);

        InboxResult result = inbox.process(delivery("m-7", "ship 8", 2), writing("m-7"), deadLetters::add);

        assertThat(result).isInstanceOfSatisfying(InboxResult.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo(DeadLetterReason.FINGERPRINT_MISMATCH);
            assertThat(d.attempts()).isZero();
            assertThat(d.headers()).containsEntry(DeadLetterHeaders.REASON, "fingerprint-mismatch");
        });
        assertThat(effects()).containsExactly(1);
    }

    @Test
    void poisonIsDeadLetteredAtOnceWithoutRunningTheHandler() throws SQLException {
        Inbox inbox = inbox(UnaryOperator.identity());

        InboxResult missing = inbox.process(delivery(null, "x", 1), writing(null), deadLetters::add);
        InboxResult invalid = inbox.process(delivery("bad\u00e9id", "x", 2), writing("bad"), deadLetters::add);
        InboxResult unreadable = inbox.process(delivery("m-9", new Object(), 3), writing("m-9"), deadLetters::add);

        assertThat(List.of(missing, invalid, unreadable)).extracting(r -> ((InboxResult.DeadLetter) r).reason())
                .containsExactly(DeadLetterReason.MISSING_MESSAGE_ID, DeadLetterReason.INVALID_MESSAGE_ID,
                        DeadLetterReason.UNREADABLE_PAYLOAD);
        assertThat(((InboxResult.DeadLetter) missing).headers()).doesNotContainKey(DeadLetterHeaders.MESSAGE_ID);
        assertThat(((InboxResult.DeadLetter) unreadable).error()).contains("java.lang.Object");
        assertThat(deadLetters).hasSize(3);
        assertThat(effects()).isEmpty();
    }

    @Test
    void anUnreadablePayloadIsNotStoredSoTheSameIdWithReadableBytesIsProcessedLater() throws SQLException {
        Inbox inbox = inbox(UnaryOperator.identity());
        inbox.process(delivery("m-10", new Object(), 1), writing("m-10"), deadLetters::add);

        InboxResult result = inbox.process(delivery("m-10", "readable", 2), writing("m-10"), deadLetters::add);

        assertThat(result).isEqualTo(new InboxResult.Processed(1));
    }

    @Test
    void aDeadLetterThatIsNotAcknowledgedLeavesTheMessageToComeBack() throws SQLException {
        Inbox inbox = inbox(UnaryOperator.identity());

        InboxResult result = inbox.process(delivery(null, "x", 1), writing(null), deadLetter -> {
            throw new java.io.IOException("broker down");
        });

        assertThat(result).isInstanceOfSatisfying(InboxResult.RetryLater.class, r -> {
            assertThat(r.reason()).isEqualTo(RetryReason.DEAD_LETTER_FAILED);
            assertThat(r.detail()).contains("broker down");
        });
        assertThat(result.isDone()).isFalse();
    }

    @Test
    void manyDeliveriesOfOneIdAtOnceRunTheHandlerOnce() throws Exception {
        Inbox inbox = inbox(UnaryOperator.identity());
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch start = new CountDownLatch(1);
        try {
            List<Future<InboxResult>> futures = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                long offset = i;
                futures.add(pool.submit(() -> {
                    start.await();
                    return inbox.process(delivery("m-11", "ship 11", offset), writing("m-11"), deadLetters::add);
                }));
            }
            start.countDown();
            List<InboxResult> results = new ArrayList<>();
            for (Future<InboxResult> f : futures) {
                results.add(f.get());
            }
            assertThat(results).filteredOn(r -> r instanceof InboxResult.Processed).hasSize(1);
            assertThat(results).allMatch(r -> r instanceof InboxResult.Processed || r instanceof InboxResult.Replayed
                    || r instanceof InboxResult.RetryLater later && later.reason() == RetryReason.IN_PROGRESS);
        } finally {
            pool.shutdownNow();
        }
        assertThat(effects()).containsExactly(1);
        assertThat(deadLetters).isEmpty();
    }

    @Test
    void aRedeliveryWhileTheFirstIsInFlightHereWaitsWithoutAConnectionAndIsReplayed() throws Exception {
        // Long enough for the redelivery to wait out the first delivery.
        TransactionalRetrySafe patient = TransactionalRetrySafe.of(RetrySafe.builder(JdbcIdempotencyStore
                .builder(ds).table(STORE_TABLE).lockTimeout(Duration.ofSeconds(30)).build()).name("inbox-it-wait")
                .build());
        Inbox inbox = Inbox.builder(patient).backoff(FAST).build();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        InboxHandler held = (connection, attempt) -> {
            writing("m-12").handle(connection, attempt);
            entered.countDown();
            release.await(30, TimeUnit.SECONDS);
        };
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<InboxResult> first = pool.submit(() -> inbox.process(delivery("m-12", "ship 12", 1), held,
                    deadLetters::add));
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();
            Future<InboxResult> redelivery = pool.submit(() -> inbox.process(delivery("m-12", "ship 12", 2),
                    writing("m-12"), deadLetters::add));

            org.awaitility.Awaitility.await("the redelivery waiting in memory").atMost(Duration.ofSeconds(20))
                    .until(() -> Engines.inFlight(patient.engine()).waiting() == 1);
            release.countDown();

            assertThat(first.get(30, TimeUnit.SECONDS)).isEqualTo(new InboxResult.Processed(1));
            assertThat(redelivery.get(30, TimeUnit.SECONDS)).isInstanceOf(InboxResult.Replayed.class);
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
        assertThat(effects()).containsExactly(1);
    }

    @Test
    void brokerRedeliveryRefusesADeliveryWithoutItsCount() {
        Inbox inbox = inbox(b -> b.retryStyle(RetryStyle.BROKER_REDELIVERY));

        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> inbox.process(delivery("m-12", "x", 1), writing("m-12"), deadLetters::add))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("delivery count");
    }

    @Test
    void givenTransactionsRunEveryAttemptAndExcludeADataSource() throws SQLException {
        List<String> keys = Collections.synchronizedList(new ArrayList<>());
        InboxTransactions pooled = InboxTransactions.pooled(ds);
        Inbox inbox = inbox(b -> b.maxAttempts(2).transactions((tx, key, fingerprint, codec, work) -> {
            keys.add(key.value());
            return pooled.execute(tx, key, fingerprint, codec, work);
        }));

        InboxResult result = inbox.process(delivery("m-13", "x", 1), writing("m-13", 1), deadLetters::add);

        assertThat(result).isEqualTo(new InboxResult.Processed(2));
        assertThat(keys).containsExactly("m-13", "m-13");
        assertThat(effects()).containsExactly(2);
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> Inbox.builder(transactional).dataSource(ds).transactions(pooled).build())
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("exclude each other");
    }

    @Test
    void anIdTheAdapterCouldNotReadIsDeadLetteredLikeAnInvalidOne() {
        List<InboxResult> heard = Collections.synchronizedList(new ArrayList<>());
        Inbox inbox = inbox(b -> b.listener(new InboxListener() {
            @Override
            public void onResult(Delivery delivery, InboxResult result) {
                heard.add(result);
            }
        }));
        io.retrysafe.InvalidKeyException twoHeaders = new io.retrysafe.InvalidKeyException(
                io.retrysafe.InvalidKeyException.Rule.MULTIPLE_VALUES, "header idempotency-key appears 2 times");

        InboxResult result = inbox.refuse(delivery(null, "x", 1), twoHeaders, deadLetters::add);

        assertThat(result).isInstanceOfSatisfying(InboxResult.DeadLetter.class, d -> {
            assertThat(d.reason()).isEqualTo(DeadLetterReason.INVALID_MESSAGE_ID);
            assertThat(d.error()).endsWith("header idempotency-key appears 2 times");
        });
        assertThat(heard).containsExactly(result);
        assertThat(deadLetters).containsExactly((InboxResult.DeadLetter) result);
    }
}
