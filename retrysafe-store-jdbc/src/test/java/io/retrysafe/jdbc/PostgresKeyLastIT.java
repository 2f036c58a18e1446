package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestDatabases;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Transactional mode with the key written last ({@link KeyOrder#LAST}) on PostgreSQL: the record is
 * inserted completed with the commit. What a payment service sees: one payment per key however many
 * duplicates race, every duplicate answered with the winner's response, the losers' writes rolled back.
 */
class PostgresKeyLastIT {
    private static final String TABLE = "rs_pg_key_last_it";
    private static final int THREADS = 16;
    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    private static TransactionalRetrySafe keyLast;
    private static TransactionalRetrySafe noLookup;
    private static ExecutorService pool;

    private String scope;
    private final Fingerprint fp = Fingerprint.sha256("pay 100".getBytes(StandardCharsets.UTF_8));
    private final AtomicInteger runs = new AtomicInteger();

    @BeforeAll
    static void setUp() throws SQLException {
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(TABLE).lockTimeout(Duration.ofSeconds(2)).build();
        store.createSchema();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS rs_pg_key_last_payment (id uuid PRIMARY KEY, scope text NOT NULL,"
                    + " amount int NOT NULL)");
            st.execute("CREATE TABLE IF NOT EXISTS rs_pg_key_last_deferred (id uuid PRIMARY KEY, scope text NOT NULL,"
                    + " slot int NOT NULL, CONSTRAINT rs_pg_key_last_deferred_slot UNIQUE (scope, slot)"
                    + " DEFERRABLE INITIALLY DEFERRED)");
        }
        keyLast = TransactionalRetrySafe.of(RetrySafe.builder(store).build(), KeyOrder.LAST);
        noLookup = TransactionalRetrySafe.of(RetrySafe.builder(store).build(), KeyOrder.LAST_NO_LOOKUP);
        pool = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        pool.shutdownNow();
    }

    @BeforeEach
    void newScope() {
        scope = "key-last-" + UUID.randomUUID();
    }

    @Test
    void theRecordIsInsertedCompletedInTheTransactionOfThePayment() throws Exception {
        IdempotencyKey key = key("k-first");

        Outcome<String> outcome = execute(key, fp, c -> pay(c, 100));

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(((Outcome.Executed<String>) outcome).completion()).isEqualTo(Outcome.Completion.STORED);
        IdempotencyRecord record = store.inspect(key).orElseThrow();
        assertThat(record.status()).isEqualTo(RecordStatus.COMPLETED);
        assertThat(record.attempt()).isEqualTo(1);
        assertThat(record.response().map(r -> new String(r.body(), StandardCharsets.UTF_8))).hasValue(outcome.orThrow());
        assertThat(xmin("SELECT xmin::text FROM " + TABLE + " WHERE scope = ?"))
                .as("the record and the payment were written by one transaction")
                .isEqualTo(xmin("SELECT xmin::text FROM rs_pg_key_last_payment WHERE scope = ?"));
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void aRetryReplaysWithoutRunningAndAnotherPayloadIsRefused() throws Exception {
        IdempotencyKey key = key("k-retry");
        String first = execute(key, fp, c -> pay(c, 100)).orThrow();

        Outcome<String> retry = execute(key, fp, c -> pay(c, 100));
        Outcome<String> other = execute(key, Fingerprint.sha256(new byte[] {2}), c -> pay(c, 200));

        assertThat(retry).isEqualTo(new Outcome.Replayed<>(first));
        assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
        assertThat(runs).hasValue(1);
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void duplicatesRacingOnOneKeyMakeOnePaymentAndAllGetItsAnswer() throws Exception {
        duplicatesRaceOnOneKey(keyLast, key("k-race"));

        assertThat(runs.get()).as("runs, some of them rolled back").isBetween(1, THREADS);
    }

    /** THREADS duplicates of one key at once: one payment, one answer for all. */
    private void duplicatesRaceOnOneKey(TransactionalRetrySafe mode, IdempotencyKey key) throws Exception {
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Outcome<String>>> futures = new ArrayList<>();
        for (int i = 0; i < THREADS; i++) {
            futures.add(pool.submit(() -> {
                start.await();
                return execute(mode, key, fp, c -> pay(c, 100));
            }));
        }
        start.countDown();
        List<Outcome<String>> outcomes = new ArrayList<>();
        for (Future<Outcome<String>> f : futures) {
            outcomes.add(f.get(60, TimeUnit.SECONDS));
        }

        List<Outcome<String>> executed = outcomes.stream().filter(o -> o instanceof Outcome.Executed).toList();
        assertThat(executed).as("one attempt committed").hasSize(1);
        String answer = executed.get(0).orThrow();
        assertThat(outcomes).as("every other duplicate got the winner's answer")
                .filteredOn(o -> !(o instanceof Outcome.Executed)).allSatisfy(o -> assertThat(o)
                        .isEqualTo(new Outcome.Replayed<>(answer)));
        assertThat(payments()).as("the losers' payments were rolled back").isEqualTo(1);
        assertThat(store.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
    }

    @Test
    void aFailingOperationLeavesNoRecordAndItsRetryRuns() throws Exception {
        IdempotencyKey key = key("k-fail");

        assertThatThrownBy(() -> execute(key, fp, c -> {
            pay(c, 100);
            throw new IllegalStateException("ledger offline");
        })).hasMessage("ledger offline");
        assertThat(store.inspect(key)).isEmpty();
        assertThat(payments()).isZero();

        Outcome<String> retry = execute(key, fp, c -> pay(c, 100));

        assertThat(retry).isInstanceOf(Outcome.Executed.class);
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void aReleasedResultIsNotKept() throws Exception {
        IdempotencyKey key = key("k-503");
        TransactionalRetrySafe storesNothingOn5xx = keyLast.with(OperationPolicy.ofDefaults());
        Outcome<StoredResponse> outcome;
        try (Connection c = ds.getConnection()) {
            outcome = storesNothingOn5xx.execute(c, key, fp, ResponseCodec.identity(), attempt -> {
                pay(c, 100);
                return StoredResponse.of(503, new byte[0]);
            });
        }

        assertThat(outcome).isInstanceOf(Outcome.Executed.class);
        assertThat(((Outcome.Executed<StoredResponse>) outcome).completion()).isEqualTo(Outcome.Completion.RELEASED);
        assertThat(store.inspect(key)).isEmpty();
        assertThat(payments()).isZero();
    }

    /** A deferred constraint of the operation's own rows fails at COMMIT with 23505 too: that is no other attempt's key. */
    @Test
    void aCommitFailingOnTheOperationsOwnConstraintIsAStoreFailureNotAnAttemptInProgress() throws Exception {
        IdempotencyKey key = key("k-deferred");

        assertThatThrownBy(() -> execute(key, fp, this::twoRowsInOneSlot))
                .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("commit");
        assertThat(store.inspect(key)).isEmpty();
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM rs_pg_key_last_deferred WHERE scope = ?")) {
            ps.setString(1, scope);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getInt(1)).isZero();
            }
        }
    }

    @Test
    void anExpiredRecordIsTakenOverAsWithTheKeyFirst() throws Exception {
        IdempotencyKey key = key("k-expired");
        execute(key, fp, c -> pay(c, 100));
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("UPDATE " + TABLE + " SET expires_at = statement_timestamp()"
                        + " - interval '1 second' WHERE scope = ?")) {
            ps.setString(1, scope);
            ps.executeUpdate();
        }

        Outcome<String> again = execute(key, fp, c -> pay(c, 100));

        assertThat(again).isInstanceOf(Outcome.Executed.class);
        assertThat(payments()).isEqualTo(2);
        assertThat(store.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
    }

    @Test
    void aDuplicateWaitingPastTheLockBoundIsInProgressAndKeepsNothing() throws Exception {
        IdempotencyKey key = key("k-slow");
        CountDownLatch finish = new CountDownLatch(1);
        Future<String> first = firstHoldingItsRecord(key, finish);

        Outcome<String> duplicate = execute(key, fp, c -> pay(c, 100));
        finish.countDown();

        assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
        String answer = first.get(30, TimeUnit.SECONDS);
        assertThat(payments()).as("the first's payment only").isEqualTo(1);
        assertThat(execute(key, fp, c -> pay(c, 100))).isEqualTo(new Outcome.Replayed<>(answer));
    }

    @Test
    void aDuplicateWhoseInsertMeetsTheFirstsCommitIsRolledBackAndReplaysIt() throws Exception {
        IdempotencyKey key = key("k-loser");
        CountDownLatch commitFirst = new CountDownLatch(1);
        Future<String> first = firstHoldingItsRecord(key, commitFirst);

        Future<Outcome<String>> duplicate = pool.submit(() -> execute(key, fp, c -> pay(c, 100)));
        await().atMost(Duration.ofSeconds(30)).until(() -> insertsWaitingOnALock() == 1);
        commitFirst.countDown();

        String answer = first.get(30, TimeUnit.SECONDS);
        assertThat(duplicate.get(30, TimeUnit.SECONDS)).isEqualTo(new Outcome.Replayed<>(answer));
        assertThat(runs).as("both ran; the duplicate was rolled back").hasValue(2);
        assertThat(payments()).isEqualTo(1);
    }

    @Test
    void joinedToTheCallersTransactionALoserIsToldToRollBackAndGetsTheWinnersAnswer() throws Exception {
        aJoinedLoserIsToldToRollBackAndGetsTheWinnersAnswer(keyLast, key("k-join"),
                Connection.TRANSACTION_READ_COMMITTED);

        assertThat(runs).as("both ran; one was rolled back").hasValue(2);
    }

    /** Two attempts joined to transactions of this test; the second's insert waits until the first commits. */
    private void aJoinedLoserIsToldToRollBackAndGetsTheWinnersAnswer(TransactionalRetrySafe mode, IdempotencyKey key,
            int isolation) throws Exception {
        CountDownLatch commitFirst = new CountDownLatch(1);
        Future<String> first = firstHoldingItsRecord(mode, key, commitFirst);

        Future<TransactionalRetrySafe.Joined<String>> second = pool.submit(() -> {
            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                c.setTransactionIsolation(isolation);
                try {
                    return mode.join(c, key, fp, ResponseCodec.utf8(), attempt -> pay(c, 100));
                } finally {
                    c.rollback(); // aborted by the insert that met the first's record: the caller rolls back
                    c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
                }
            }
        });
        await().atMost(Duration.ofSeconds(30)).until(() -> insertsWaitingOnALock() == 1);
        commitFirst.countDown();

        String answer = first.get(30, TimeUnit.SECONDS);
        TransactionalRetrySafe.Joined<String> loser = second.get(30, TimeUnit.SECONDS);
        assertThat(loser.commit()).isFalse();
        assertThat(loser.outcome()).isEqualTo(new Outcome.Replayed<>(answer));
        assertThat(payments()).isEqualTo(1);
    }

    /**
     * The insert sets the lock bound and puts the transaction's own back in one statement: what runs after it in
     * the caller's transaction, and its COMMIT, wait as they would without RetrySafe.
     */
    @Test
    void joinedTheLockBoundIsTheInsertsAloneAndTheCallersOwnIsBackAfterIt() throws Exception {
        for (TransactionalRetrySafe mode : List.of(keyLast, noLookup)) {
            IdempotencyKey key = key("k-bound-" + mode.keyOrder());
            TransactionalRetrySafe.Joined<String> joined;
            String after;
            try (Connection c = ds.getConnection()) {
                exec(c, "SET lock_timeout = '7s'");
                try {
                    c.setAutoCommit(false);
                    joined = mode.join(c, key, fp, ResponseCodec.utf8(), attempt -> lockTimeout(c));
                    after = lockTimeout(c);
                    c.commit();
                    joined.committed();
                } finally {
                    c.rollback(); // nothing left by a commit; a failure's transaction is not taken back to the pool
                    c.setAutoCommit(true);
                    exec(c, "RESET lock_timeout"); // the pooled connection goes back as it came
                }
            }

            assertThat(joined.outcome().orThrow()).as("seen by the operation, " + mode.keyOrder()).isEqualTo("7s");
            assertThat(after).as("seen after the insert, in its transaction, " + mode.keyOrder()).isEqualTo("7s");
            assertThat(store.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
        }
    }

    private static String lockTimeout(Connection c) throws SQLException {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SHOW lock_timeout")) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static void exec(Connection c, String sql) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    @Test
    void onlyPostgresqlsStandardLayoutCanWriteTheKeyLast() {
        JdbcIdempotencyStore partitioned = JdbcIdempotencyStore.builder(ds).layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY)
                .table("rs_pg_key_last_partitioned").build();

        assertThatThrownBy(() -> TransactionalRetrySafe.of(RetrySafe.builder(partitioned).build(), KeyOrder.LAST))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the key can be written last only on PostgreSQL's standard layout")
                .hasMessageContaining("PARTITIONED_BY_EXPIRY_DAY");
        assertThat(TransactionalRetrySafe.of(RetrySafe.builder(partitioned).build()).keyOrder()).isEqualTo(KeyOrder.FIRST);
    }

    /**
     * {@link KeyOrder#LAST_NO_LOOKUP}: nothing is read before the payment. A retry pays again inside a
     * transaction that is rolled back, and is answered with the stored response whatever its own run did.
     */
    @Nested
    class WithoutALookup {
        @Test
        void aRetryIsRolledBackAndReplaysTheFirstAnswerAndAnotherPayloadIsRefused() throws Exception {
            IdempotencyKey key = key("n-retry");
            Outcome<String> first = execute(noLookup, key, fp, c -> pay(c, 100));

            Outcome<String> retry = execute(noLookup, key, fp, c -> pay(c, 100));
            Outcome<String> other = execute(noLookup, key, Fingerprint.sha256(new byte[] {2}), c -> pay(c, 200));

            assertThat(first).isInstanceOf(Outcome.Executed.class);
            assertThat(retry).isEqualTo(new Outcome.Replayed<>(first.orThrow()));
            assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
            assertThat(runs).as("each ran; two were rolled back").hasValue(3);
            assertThat(payments()).isEqualTo(1);
            IdempotencyRecord record = store.inspect(key).orElseThrow();
            assertThat(record.attempt()).isEqualTo(1);
            assertThat(record.response().map(r -> new String(r.body(), StandardCharsets.UTF_8)))
                    .hasValue(first.orThrow());
        }

        @Test
        void aRetryWhoseRunFailsGetsTheStoredAnswerNotTheFailure() throws Exception {
            IdempotencyKey key = key("n-retry-fails");
            String first = execute(noLookup, key, fp, c -> pay(c, 100)).orThrow();

            // The account the first payment emptied: the second run refuses, but the caller paid once already.
            Outcome<String> retry = execute(noLookup, key, fp, c -> {
                pay(c, 100);
                throw new IllegalStateException("insufficient funds");
            });
            Outcome<String> other = execute(noLookup, key, Fingerprint.sha256(new byte[] {2}), c -> {
                throw new IllegalArgumentException("amount not allowed");
            });

            assertThat(retry).isEqualTo(new Outcome.Replayed<>(first));
            assertThat(other).isInstanceOf(Outcome.FingerprintMismatch.class);
            assertThat(payments()).isEqualTo(1);
        }

        @Test
        void anAsynchronousRetryWhoseStageFailsOrThrowsGetsTheStoredAnswer() throws Exception {
            IdempotencyKey key = key("n-async");
            String first = execute(noLookup, key, fp, c -> pay(c, 100)).orThrow();
            Outcome<String> failedStage;
            Outcome<String> thrown;
            try (Connection c = ds.getConnection()) {
                failedStage = noLookup.executeAsync(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    pay(c, 100);
                    return CompletableFuture.<String>failedFuture(new IllegalStateException("insufficient funds"));
                }).toCompletableFuture().get(30, TimeUnit.SECONDS);
                thrown = noLookup.executeAsync(c, key, fp, ResponseCodec.utf8(), attempt -> {
                    pay(c, 100);
                    throw new IllegalStateException("insufficient funds");
                }).toCompletableFuture().get(30, TimeUnit.SECONDS);
            }

            assertThat(failedStage).isEqualTo(new Outcome.Replayed<>(first));
            assertThat(thrown).isEqualTo(new Outcome.Replayed<>(first));
            assertThat(payments()).isEqualTo(1);
        }

        @Test
        void aRetryWhoseAnswerIsNotKeptGetsTheStoredAnswer() throws Exception {
            IdempotencyKey key = key("n-retry-503");
            TransactionalRetrySafe storesNothingOn5xx = noLookup.with(OperationPolicy.ofDefaults());
            Outcome<StoredResponse> first;
            Outcome<StoredResponse> retry;
            try (Connection c = ds.getConnection()) {
                first = storesNothingOn5xx.execute(c, key, fp, ResponseCodec.identity(), attempt -> {
                    pay(c, 100);
                    return StoredResponse.of(201, "paid".getBytes(StandardCharsets.UTF_8));
                });
                retry = storesNothingOn5xx.execute(c, key, fp, ResponseCodec.identity(), attempt -> {
                    pay(c, 100);
                    return StoredResponse.of(503, new byte[0]);
                });
            }

            assertThat(first).isInstanceOf(Outcome.Executed.class);
            assertThat(retry).isInstanceOf(Outcome.Replayed.class);
            assertThat(retry.orThrow().status()).isEqualTo(201);
            assertThat(new String(retry.orThrow().body(), StandardCharsets.UTF_8)).isEqualTo("paid");
            assertThat(payments()).isEqualTo(1);
        }

        @Test
        void aFirstRunThatFailsLeavesNoRecordAndItsRetryPays() throws Exception {
            IdempotencyKey key = key("n-fail");

            assertThatThrownBy(() -> execute(noLookup, key, fp, c -> {
                pay(c, 100);
                throw new IllegalStateException("ledger offline");
            })).hasMessage("ledger offline");
            assertThat(store.inspect(key)).isEmpty();

            assertThat(execute(noLookup, key, fp, c -> pay(c, 100))).isInstanceOf(Outcome.Executed.class);
            assertThat(payments()).isEqualTo(1);
        }

        @Test
        void expiredReleasedAndAbandonedRecordsAreTakenOverAndALiveAttemptIsNot() throws Exception {
            IdempotencyKey expired = paidAndExpired("n-expired");
            IdempotencyKey released = releasedByStandaloneMode("n-released");
            IdempotencyKey abandoned = key("n-abandoned");
            store.tryClaim(new ClaimRequest(abandoned, fp, OwnerToken.random(), Duration.ofSeconds(30),
                    Duration.ofHours(1)));
            update("UPDATE " + TABLE + " SET lease_expires_at = statement_timestamp() - interval '1 second'"
                    + " WHERE scope = ? AND idem_key = 'n-abandoned'");
            IdempotencyKey live = key("n-live");
            store.tryClaim(new ClaimRequest(live, fp, OwnerToken.random(), Duration.ofMinutes(5), Duration.ofHours(1)));

            assertThat(execute(noLookup, expired, fp, c -> pay(c, 100))).isInstanceOf(Outcome.Executed.class);
            assertThat(execute(noLookup, released, fp, c -> pay(c, 100))).isInstanceOf(Outcome.Executed.class);
            assertThat(execute(noLookup, abandoned, fp, c -> pay(c, 100))).isInstanceOf(Outcome.Executed.class);
            assertThat(execute(noLookup, live, fp, c -> pay(c, 100))).isInstanceOf(Outcome.InProgress.class);

            assertThat(payments()).as("two for the expired key, one each for the released and abandoned")
                    .isEqualTo(4);
            assertThat(store.inspect(expired).orElseThrow().attempt()).as("a new life").isEqualTo(1);
            assertThat(store.inspect(released).orElseThrow().attempt()).isEqualTo(2);
            assertThat(store.inspect(abandoned).orElseThrow().attempt()).isEqualTo(2);
            for (IdempotencyKey taken : List.of(expired, released, abandoned)) {
                assertThat(store.inspect(taken).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
            }
            assertThat(store.inspect(live).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(runs).as("the first payment, two runs for each key taken over (the plain insert's rolled back,"
                    + " then one claimed first), one for the live attempt's key").hasValue(1 + 3 * 2 + 1);
        }

        @Test
        void aDuplicateWaitingPastTheLockBoundIsInProgressAndRunsOnce() throws Exception {
            IdempotencyKey key = key("n-slow");
            CountDownLatch finish = new CountDownLatch(1);
            Future<String> first = firstHoldingItsRecord(noLookup, key, finish);

            Outcome<String> duplicate = execute(noLookup, key, fp, c -> pay(c, 100));
            finish.countDown();

            assertThat(duplicate).isInstanceOf(Outcome.InProgress.class);
            assertThat(runs).as("the first's run and the duplicate's one, rolled back; not run again").hasValue(2);
            String answer = first.get(30, TimeUnit.SECONDS);
            assertThat(payments()).isEqualTo(1);
            assertThat(execute(noLookup, key, fp, c -> pay(c, 100))).isEqualTo(new Outcome.Replayed<>(answer));
        }

        @Test
        void joinedOrAsynchronousTheInsertItselfTakesOverWhatAClaimWould() throws Exception {
            IdempotencyKey expired = paidAndExpired("n-join-expired");
            IdempotencyKey released = releasedByStandaloneMode("n-async-released");
            int before = runs.get();

            TransactionalRetrySafe.Joined<String> joined;
            Outcome<String> async;
            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                joined = noLookup.join(c, expired, fp, ResponseCodec.utf8(), attempt -> pay(c, 100));
                c.commit();
                joined.committed();
                c.setAutoCommit(true);
                async = noLookup.executeAsync(c, released, fp, ResponseCodec.utf8(),
                        attempt -> CompletableFuture.completedFuture(pay(c, 100))).toCompletableFuture()
                        .get(30, TimeUnit.SECONDS);
            }

            assertThat(joined.commit()).isTrue();
            assertThat(joined.outcome()).isInstanceOf(Outcome.Executed.class);
            assertThat(async).isInstanceOf(Outcome.Executed.class);
            assertThat(runs.get() - before).as("each ran once: neither can be run again").isEqualTo(2);
            assertThat(store.inspect(expired).orElseThrow().attempt()).isEqualTo(1);
            assertThat(store.inspect(released).orElseThrow().attempt()).isEqualTo(2);
            assertThat(payments()).isEqualTo(3);
        }

        /**
         * Joined to a new transaction whose caller can run the operation again (the Spring Boot starter's filter):
         * the plain insert, and a record to take over is a second run in a new transaction, claimed first.
         */
        @Test
        void joinedNewWhereTheCallerCanRunAgainARecordToTakeOverAsksForASecondRun() throws Exception {
            IdempotencyKey expired = paidAndExpired("n-again-expired");
            IdempotencyKey released = releasedByStandaloneMode("n-again-released");
            IdempotencyKey completed = key("n-again-completed");
            String answer = execute(noLookup, completed, fp, c -> pay(c, 100)).orThrow();
            int before = runs.get();
            int paymentsBefore = payments();

            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                for (IdempotencyKey taken : List.of(expired, released)) {
                    TransactionalRetrySafe.Joined<String> first = noLookup.joinNewOrRunAgain(c, taken, fp,
                            ResponseCodec.utf8(), attempt -> pay(c, 100));
                    assertThat(first.mustRunAgain()).as("%s", first).isTrue();
                    assertThat(first.commit()).isFalse();
                    c.rollback();

                    TransactionalRetrySafe.Joined<String> again = first.runAgain(c);
                    assertThat(again.mustRunAgain()).isFalse();
                    assertThat(again.commit()).isTrue();
                    c.commit();
                    again.committed();
                    assertThat(again.outcome()).isInstanceOf(Outcome.Executed.class);
                }
                TransactionalRetrySafe.Joined<String> retry = noLookup.joinNewOrRunAgain(c, completed, fp,
                        ResponseCodec.utf8(), attempt -> pay(c, 100));
                c.rollback();
                assertThat(retry.mustRunAgain()).isFalse();
                assertThat(retry.outcome()).isEqualTo(new Outcome.Replayed<>(answer));
                assertThatThrownBy(() -> retry.runAgain(c)).isInstanceOf(IllegalStateException.class);
                c.setAutoCommit(true);
            }

            assertThat(runs.get() - before).as("two runs for each key taken over, one for the retry").isEqualTo(5);
            assertThat(payments() - paymentsBefore).as("one kept for each key taken over").isEqualTo(2);
            assertThat(store.inspect(expired).orElseThrow().attempt()).as("a new life").isEqualTo(1);
            assertThat(store.inspect(released).orElseThrow().attempt()).isEqualTo(2);
            for (IdempotencyKey taken : List.of(expired, released)) {
                assertThat(store.inspect(taken).orElseThrow().status()).isEqualTo(RecordStatus.COMPLETED);
            }
        }

        @Test
        void duplicatesRacingOnOneKeyMakeOnePaymentAndAllGetItsAnswer() throws Exception {
            duplicatesRaceOnOneKey(noLookup, key("n-race"));

            assertThat(runs).as("every duplicate ran; all but one were rolled back").hasValue(THREADS);
        }

        @Test
        void aCommitFailingOnTheOperationsOwnConstraintIsAStoreFailure() throws Exception {
            IdempotencyKey key = key("n-deferred");

            assertThatThrownBy(() -> execute(noLookup, key, fp, PostgresKeyLastIT.this::twoRowsInOneSlot))
                    .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("commit");
            assertThat(store.inspect(key)).isEmpty();
        }

        /** Under REPEATABLE READ the takeover meets a record committed after its snapshot: 40001, not 23505. */
        @ParameterizedTest
        @ValueSource(ints = {Connection.TRANSACTION_READ_COMMITTED, Connection.TRANSACTION_REPEATABLE_READ})
        void joinedToTheCallersTransactionALoserIsToldToRollBackAndGetsTheWinnersAnswer(int isolation)
                throws Exception {
            aJoinedLoserIsToldToRollBackAndGetsTheWinnersAnswer(noLookup, key("n-join-" + isolation), isolation);
        }

        /** A key paid once, whose record then expired without being purged. */
        private IdempotencyKey paidAndExpired(String value) throws SQLException {
            IdempotencyKey key = key(value);
            execute(noLookup, key, fp, c -> pay(c, 100));
            update("UPDATE " + TABLE + " SET expires_at = statement_timestamp() - interval '1 second'"
                    + " WHERE scope = ? AND idem_key = '" + value + "'");
            return key;
        }

        /** A key whose record standalone mode released (FAILED) after its operation threw. */
        private IdempotencyKey releasedByStandaloneMode(String value) {
            IdempotencyKey key = key(value);
            RetrySafe standalone = RetrySafe.builder(store).build();
            assertThatThrownBy(() -> standalone.execute(key, fp, ResponseCodec.utf8(), attempt -> {
                throw new IllegalStateException("provider down");
            })).hasMessage("provider down");
            return key;
        }

        private void update(String sql) throws SQLException {
            try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setString(1, scope);
                assertThat(ps.executeUpdate()).isEqualTo(1);
            }
        }
    }

    // ---- helpers

    /**
     * The first attempt, joined to a transaction of this test: once this returns its record is
     * inserted, uncommitted, and it commits when {@code commit} opens; its future is its answer.
     */
    private Future<String> firstHoldingItsRecord(IdempotencyKey key, CountDownLatch commit) throws Exception {
        return firstHoldingItsRecord(keyLast, key, commit);
    }

    private Future<String> firstHoldingItsRecord(TransactionalRetrySafe mode, IdempotencyKey key, CountDownLatch commit)
            throws Exception {
        CountDownLatch inserted = new CountDownLatch(1);
        Future<String> first = pool.submit(() -> {
            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                TransactionalRetrySafe.Joined<String> joined = mode.join(c, key, fp, ResponseCodec.utf8(),
                        attempt -> pay(c, 100));
                assertThat(joined.commit()).isTrue();
                assertThat(joined.outcome()).isInstanceOf(Outcome.Executed.class);
                inserted.countDown();
                commit.await();
                c.commit();
                joined.committed();
                return joined.outcome().orThrow();
            }
        });
        assertThat(inserted.await(30, TimeUnit.SECONDS)).as("the first attempt inserted its record").isTrue();
        return first;
    }

    private interface Work {
        String run(Connection c) throws SQLException;
    }

    private IdempotencyKey key(String value) {
        return IdempotencyKey.of(scope, value);
    }

    private Outcome<String> execute(IdempotencyKey key, Fingerprint fingerprint, Work work) throws SQLException {
        return execute(keyLast, key, fingerprint, work);
    }

    private Outcome<String> execute(TransactionalRetrySafe mode, IdempotencyKey key, Fingerprint fingerprint, Work work)
            throws SQLException {
        try (Connection c = ds.getConnection()) {
            return mode.execute(c, key, fingerprint, ResponseCodec.utf8(), attempt -> work.run(c));
        }
    }

    private String pay(Connection c, int amount) throws SQLException {
        runs.incrementAndGet();
        UUID id = UUID.randomUUID();
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO rs_pg_key_last_payment (id, scope, amount) VALUES (?, ?, ?)")) {
            ps.setObject(1, id);
            ps.setString(2, scope);
            ps.setInt(3, amount);
            ps.executeUpdate();
        }
        return "payment " + id;
    }

    /** Two rows in one slot of the deferred table: the transaction fails at its COMMIT, not here. */
    private String twoRowsInOneSlot(Connection c) throws SQLException {
        for (int i = 0; i < 2; i++) {
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO rs_pg_key_last_deferred (id, scope, slot) VALUES (?, ?, 1)")) {
                ps.setObject(1, UUID.randomUUID());
                ps.setString(2, scope);
                ps.executeUpdate();
            }
        }
        return "looked fine";
    }

    private int payments() throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM rs_pg_key_last_payment WHERE scope = ?")) {
            ps.setString(1, scope);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    private String xmin(String sql) throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, scope);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getString(1);
            }
        }
    }

    /** Sessions whose insert into this test's records table waits on another transaction's lock. */
    private int insertsWaitingOnALock() throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position(? in query) > 0")) {
            ps.setString(1, "INSERT INTO " + TABLE);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }
}
