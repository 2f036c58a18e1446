package io.retrysafe.jdbc.crash;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestDatabases;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A process killed with SIGKILL inside its operation, after its business write: what the retry
 * sees. The process is {@link CrashChild}, a separate JVM on the same PostgreSQL database.
 */
class CrashIT {
    private static final String STORE_TABLE = "rs_crash_it";
    private static final String PAYMENT_TABLE = "rs_crash_payment";
    /** The dead owner's lease in standalone mode. */
    private static final Duration LEASE_TTL = Duration.ofSeconds(2);
    /** Covers the rollback of the dead transaction, which PostgreSQL starts when it sees the socket close. */
    private static final Duration LOCK_TIMEOUT = Duration.ofSeconds(10);
    /** JVM start, connection and claim of the child, on a slow machine. */
    private static final Duration CHILD_INSIDE_BOUND = Duration.ofSeconds(30);
    private static final Duration CHILD_EXIT_BOUND = Duration.ofSeconds(10);
    private static final int CONCURRENT_RETRIES = 8;
    private static final int SIGKILL_EXIT_VALUE = 128 + 9;

    private static DataSource ds;
    private static JdbcIdempotencyStore store;
    private static TransactionalRetrySafe tx;
    private static RetrySafe standalone;
    private static ExecutorService pool;

    private String scope;
    private IdempotencyKey key;
    private Child child;

    @BeforeAll
    static void setUp() throws SQLException {
        ds = TestDatabases.postgres();
        store = JdbcIdempotencyStore.builder(ds).table(STORE_TABLE).lockTimeout(LOCK_TIMEOUT).build();
        store.createSchema();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + PAYMENT_TABLE + " (id uuid PRIMARY KEY, scope text NOT NULL,"
                    + " amount int NOT NULL, attempt int NOT NULL)");
            st.execute("CREATE INDEX IF NOT EXISTS " + PAYMENT_TABLE + "_scope_idx ON " + PAYMENT_TABLE + " (scope)");
        }
        tx = TransactionalRetrySafe.of(RetrySafe.builder(store).build());
        standalone = RetrySafe.builder(store).build();
        pool = Executors.newCachedThreadPool();
    }

    @AfterAll
    static void tearDown() {
        pool.shutdownNow();
    }

    @BeforeEach
    void newScope() {
        scope = "crash-it-" + UUID.randomUUID();
        key = IdempotencyKey.of(scope, "k-crash");
    }

    @AfterEach
    void noChildOutlivesItsTest() throws Exception {
        if (child != null) {
            child.close();
        }
    }

    @RepeatedTest(20)
    void transactionalKilledInsideTheOperationLeavesNothingAndTheRetryRunsItOnce() throws Exception {
        killInsideTheTransactionAndRetry(Connection.TRANSACTION_READ_COMMITTED);
    }

    /** The same at the stricter isolation levels, the dead one's and the retries' transactions alike. */
    @ParameterizedTest(name = "isolation {0}")
    @ValueSource(ints = {Connection.TRANSACTION_REPEATABLE_READ, Connection.TRANSACTION_SERIALIZABLE})
    void transactionalKilledAtAStricterIsolationLevelLeavesNothingAndTheRetryRunsItOnce(int isolation)
            throws Exception {
        killInsideTheTransactionAndRetry(isolation);
    }

    private void killInsideTheTransactionAndRetry(int isolation) throws Exception {
        child = Child.start("transactional", TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword(), STORE_TABLE, PAYMENT_TABLE, scope, key.value(),
                Integer.toString(isolation));
        String deadPayment = child.awaitInside(CHILD_INSIDE_BOUND);
        child.kill();

        // The dead transaction holds the key's row lock until PostgreSQL has rolled it back; the retry's
        // claim waits for that on the key's unique index, bounded by the store's lockTimeout.
        List<Integer> attemptsRun = Collections.synchronizedList(new ArrayList<>());
        Outcome<String> retry;
        try (Connection c = ds.getConnection()) {
            c.setTransactionIsolation(isolation);
            retry = tx.execute(c, key, CrashChild.FINGERPRINT, ResponseCodec.utf8(), attempt -> {
                attemptsRun.add(attempt.number());
                return "payment " + CrashChild.pay(c, PAYMENT_TABLE, scope, attempt.number());
            });
        }

        assertThat(retry).as("the retry after the crash").isInstanceOf(Outcome.Executed.class);
        Outcome.Executed<String> executed = (Outcome.Executed<String>) retry;
        assertThat(executed.attempt().number()).as("the killed transaction left no record").isEqualTo(1);
        assertThat(executed.completion()).isEqualTo(Outcome.Completion.STORED);
        assertThat(payments()).as("the killed transaction's payment was rolled back")
                .containsExactly(new Payment(executed.value().substring("payment ".length()), 1))
                .noneMatch(p -> p.id().equals(deadPayment));

        for (int i = 0; i < 3; i++) {
            Outcome<String> again;
            try (Connection c = ds.getConnection()) {
                c.setTransactionIsolation(isolation);
                again = tx.execute(c, key, CrashChild.FINGERPRINT, ResponseCodec.utf8(), attempt -> {
                    attemptsRun.add(attempt.number());
                    return "payment " + CrashChild.pay(c, PAYMENT_TABLE, scope, attempt.number());
                });
            }
            assertThat(again).isEqualTo(new Outcome.Replayed<>(executed.value()));
        }
        assertThat(attemptsRun).containsExactly(1);
        assertThat(payments()).hasSize(1);
        assertThat(store.inspect(key)).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.attempt()).isEqualTo(1);
        });
    }

    @RepeatedTest(5)
    void standaloneOwnerKilledInsideTheOperationIsTakenOverOnceAfterItsLeaseExpires() throws Exception {
        child = Child.start("standalone", TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(),
                TestDatabases.postgresPassword(), STORE_TABLE, PAYMENT_TABLE, scope, key.value(),
                Long.toString(LEASE_TTL.toMillis()));
        String deadPayment = child.awaitInside(CHILD_INSIDE_BOUND);
        child.kill();

        List<Integer> attemptsRun = Collections.synchronizedList(new ArrayList<>());
        Operation<String> operation = attempt -> {
            attemptsRun.add(attempt.number());
            // A side effect outside the record's transaction, as the child's was: its own auto-commit connection.
            try (Connection c = ds.getConnection()) {
                return "payment " + CrashChild.pay(c, PAYMENT_TABLE, scope, attempt.number());
            }
        };

        // The record was committed before the work, and nobody can tell a dead owner from a slow one
        // until its lease runs out: the key is in progress.
        assertThat(standalone.execute(key, CrashChild.FINGERPRINT, ResponseCodec.utf8(), operation))
                .as("a retry while the dead owner's lease is alive").isInstanceOf(Outcome.InProgress.class);
        assertThat(attemptsRun).isEmpty();

        await().atMost(LEASE_TTL.plus(Duration.ofSeconds(10))).pollInterval(Duration.ofMillis(25))
                .until(this::leaseExpired);

        CountDownLatch start = new CountDownLatch(1);
        List<Future<Outcome<String>>> futures = new ArrayList<>();
        for (int i = 0; i < CONCURRENT_RETRIES; i++) {
            futures.add(pool.submit(() -> {
                assertThat(start.await(10, TimeUnit.SECONDS)).isTrue();
                return standalone.execute(key, CrashChild.FINGERPRINT, ResponseCodec.utf8(), operation);
            }));
        }
        start.countDown();
        List<Outcome<String>> outcomes = new ArrayList<>();
        for (Future<Outcome<String>> f : futures) {
            outcomes.add(f.get(30, TimeUnit.SECONDS));
        }

        assertThat(outcomes).filteredOn(o -> o instanceof Outcome.Executed).as("takeovers").hasSize(1);
        Outcome.Executed<String> takeover = (Outcome.Executed<String>) outcomes.stream()
                .filter(o -> o instanceof Outcome.Executed).findFirst().orElseThrow();
        assertThat(takeover.attempt().number()).as("the takeover is told it is the second attempt").isEqualTo(2);
        assertThat(takeover.completion()).isEqualTo(Outcome.Completion.STORED);
        assertThat(attemptsRun).containsExactly(2);
        assertThat(outcomes).filteredOn(o -> !(o instanceof Outcome.Executed)).allSatisfy(o -> assertThat(o)
                .isIn(new Outcome.Replayed<>(takeover.value()), new Outcome.InProgress<>(
                        standalone.policy().retryAfter())));

        assertThat(standalone.execute(key, CrashChild.FINGERPRINT, ResponseCodec.utf8(), operation))
                .isEqualTo(new Outcome.Replayed<>(takeover.value()));
        assertThat(attemptsRun).containsExactly(2);
        assertThat(store.inspect(key)).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.attempt()).isEqualTo(2);
        });
        // Two payments, and that is the contract of standalone mode, not a bug: the dead attempt's write
        // was committed outside the record's transaction before the crash, and nothing can roll it back;
        // the takeover then ran the operation again. This is why the operation is told its attempt
        // number: attempt 2 should ask the outside system whether attempt 1 got through (for example by
        // sending the same idempotency key to the payment provider) instead of paying blindly.
        assertThat(payments()).containsExactlyInAnyOrder(new Payment(deadPayment, 1),
                new Payment(takeover.value().substring("payment ".length()), 2));
    }

    private record Payment(String id, int attempt) {
    }

    private List<Payment> payments() throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(
                "SELECT id, attempt FROM " + PAYMENT_TABLE + " WHERE scope = ? ORDER BY attempt")) {
            ps.setString(1, scope);
            List<Payment> rows = new ArrayList<>();
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Payment(rs.getString(1), rs.getInt(2)));
                }
            }
            return rows;
        }
    }

    /** By the database's clock, as the store decides; never the JVM's. */
    private boolean leaseExpired() throws SQLException {
        try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT lease_expires_at"
                + " <= statement_timestamp() FROM " + STORE_TABLE + " WHERE scope = ? AND idem_key = ?")) {
            ps.setString(1, key.scope());
            ps.setString(2, key.value());
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("the dead owner's record").isTrue();
                return rs.getBoolean(1);
            }
        }
    }

    /** A {@link CrashChild} JVM; stderr goes to a file so that it cannot block and can be shown on failure. */
    private static final class Child implements AutoCloseable {
        private final Process process;
        private final Path stderr;
        private final CompletableFuture<String> inside = new CompletableFuture<>();
        private final StringBuffer otherOutput = new StringBuffer();

        private Child(Process process, Path stderr) {
            this.process = process;
            this.stderr = stderr;
        }

        static Child start(String... args) throws IOException {
            List<String> command = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java",
                    "-cp", System.getProperty("java.class.path"), CrashChild.class.getName()));
            command.addAll(List.of(args));
            Path stderr = Files.createTempFile("retrysafe-crash-child-", ".err");
            Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
            Child child = new Child(process, stderr);
            Thread reader = new Thread(child::readStdout, "crash-child-stdout-" + process.pid());
            reader.setDaemon(true);
            reader.start();
            return child;
        }

        private void readStdout() {
            try (BufferedReader out = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    if (line.startsWith(CrashChild.INSIDE + " ")) {
                        inside.complete(line.substring(CrashChild.INSIDE.length() + 1));
                    } else {
                        otherOutput.append(line).append('\n');
                    }
                }
                inside.completeExceptionally(new IllegalStateException("the child's stdout ended"));
            } catch (IOException e) {
                inside.completeExceptionally(e);
            }
        }

        /** Waits for the child to be blocked inside its operation; returns the id of the payment it wrote. */
        String awaitInside(Duration bound) throws InterruptedException {
            try {
                return inside.get(bound.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException | ExecutionException e) {
                if (e instanceof ExecutionException) {
                    // Its stdout closed: it is exiting; let it finish so that its exit value is shown.
                    process.waitFor(CHILD_EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS);
                }
                throw new AssertionError("the child did not report " + CrashChild.INSIDE + " within " + bound + " ("
                        + state() + ")\n--- its stdout:\n" + otherOutput + "--- its stderr:\n" + stderr(), e);
            }
        }

        /** SIGKILL: no shutdown hook, no rollback, no socket goodbye; the kernel closes its sockets. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            assertThat(process.waitFor(CHILD_EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS))
                    .as("the child is dead within %s", CHILD_EXIT_BOUND).isTrue();
            assertThat(process.exitValue()).as("exit value of a process killed by SIGKILL")
                    .isEqualTo(SIGKILL_EXIT_VALUE);
        }

        private String state() {
            return process.isAlive() ? "still running, pid " + process.pid() : "exited with " + process.exitValue();
        }

        private String stderr() {
            try {
                return Files.readString(stderr, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(unreadable: " + e + ")";
            }
        }

        @Override
        public void close() throws IOException, InterruptedException {
            try {
                if (process.isAlive()) {
                    process.destroyForcibly();
                    if (!process.waitFor(CHILD_EXIT_BOUND.toMillis(), TimeUnit.MILLISECONDS)) {
                        throw new IllegalStateException("child " + process.pid() + " survived SIGKILL for "
                                + CHILD_EXIT_BOUND);
                    }
                }
            } finally {
                process.getOutputStream().close();
                Files.deleteIfExists(stderr);
            }
        }
    }
}
