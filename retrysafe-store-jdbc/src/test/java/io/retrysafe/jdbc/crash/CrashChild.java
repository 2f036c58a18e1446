package io.retrysafe.jdbc.crash;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.ChildJvm;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A process that dies inside an operation: it runs one operation through RetrySafe, does the
 * operation's business write, prints {@value #INSIDE} and the payment's id, then blocks until
 * {@link CrashIT} kills it with SIGKILL.
 *
 * <pre>
 * CrashChild transactional URL USER PASSWORD STORE_TABLE PAYMENT_TABLE SCOPE KEY
 * CrashChild standalone    URL USER PASSWORD STORE_TABLE PAYMENT_TABLE SCOPE KEY LEASE_TTL_MILLIS
 * </pre>
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts, so no child
 * outlives the build.
 */
public final class CrashChild {
    /** The line prefix printed once the business write is done and the child is blocked. */
    static final String INSIDE = "INSIDE";

    /** The request the child and the test's retries send with the key. */
    static final Fingerprint FINGERPRINT = Fingerprint.sha256("pay 100".getBytes(StandardCharsets.UTF_8));

    static final int AMOUNT = 100;

    private static final CountDownLatch NEVER = new CountDownLatch(1);

    private CrashChild() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 8) {
            throw new IllegalArgumentException("usage: CrashChild transactional|standalone URL USER PASSWORD STORE_TABLE"
                    + " PAYMENT_TABLE SCOPE KEY [ISOLATION|LEASE_TTL_MILLIS], but was " + args.length + " arguments");
        }
        ChildJvm.haltWhenParentDies();
        String mode = args[0];
        String url = args[1];
        String user = args[2];
        String password = args[3];
        String storeTable = args[4];
        String paymentTable = args[5];
        IdempotencyKey key = IdempotencyKey.of(args[6], args[7]);

        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setURL(url);
        dataSource.setUser(user);
        dataSource.setPassword(password);
        JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).dialect(JdbcDialect.POSTGRESQL)
                .table(storeTable).build();

        Outcome<String> outcome;
        switch (mode) {
            case "transactional" -> {
                // One connection: the claim, the payment and (never reached) the response share its transaction.
                Connection connection = DriverManager.getConnection(url, user, password);
                if (args.length == 9) {
                    connection.setTransactionIsolation(Integer.parseInt(args[8]));
                }
                TransactionalRetrySafe tx = TransactionalRetrySafe.of(RetrySafe.builder(store).build());
                outcome = tx.execute(connection, key, FINGERPRINT, ResponseCodec.utf8(),
                        blockAfter(attempt -> pay(connection, paymentTable, key.scope(), attempt)));
            }
            case "standalone" -> {
                if (args.length != 9) {
                    throw new IllegalArgumentException("standalone mode needs LEASE_TTL_MILLIS as the 9th argument");
                }
                Duration leaseTtl = Duration.ofMillis(Long.parseLong(args[8]));
                // Auto-commit and outside the idempotency record's transaction, like a call to a payment provider.
                Connection sideEffects = DriverManager.getConnection(url, user, password);
                RetrySafe retrySafe = RetrySafe.builder(store)
                        .policy(OperationPolicy.custom().leaseTtl(leaseTtl).build()).build();
                outcome = retrySafe.execute(key, FINGERPRINT, ResponseCodec.utf8(),
                        blockAfter(attempt -> pay(sideEffects, paymentTable, key.scope(), attempt)));
            }
            default -> throw new IllegalArgumentException(
                    "mode must be transactional or standalone, but was \"" + mode + "\"");
        }
        // Unreachable unless the claim was refused: say so, the test expects the child to block inside.
        System.out.println("NOT INSIDE " + outcome);
        System.out.flush();
        System.exit(2);
    }

    /** The operation's business write, given the attempt number; returns the payment's id. */
    interface Payment {
        String pay(int attempt) throws SQLException;
    }

    private static Operation<String> blockAfter(Payment payment) {
        return attempt -> {
            String paymentId = payment.pay(attempt.number());
            System.out.println(INSIDE + " " + paymentId);
            System.out.flush();
            NEVER.await();
            throw new AssertionError("the latch is never released");
        };
    }

    /** Inserts one payment row and returns its id. */
    static String pay(Connection c, String paymentTable, String scope, int attempt) throws SQLException {
        UUID id = UUID.randomUUID();
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO " + paymentTable + " (id, scope, amount, attempt) VALUES (?, ?, ?, ?)")) {
            ps.setObject(1, id);
            ps.setString(2, scope);
            ps.setInt(3, AMOUNT);
            ps.setInt(4, attempt);
            ps.executeUpdate();
        }
        return id.toString();
    }
}
