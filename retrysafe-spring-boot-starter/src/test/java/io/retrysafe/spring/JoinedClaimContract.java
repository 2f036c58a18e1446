package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.InProgressException;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * An {@link Idempotent} method called inside the caller's own transaction, after the caller wrote
 * a row of its own: when the key is held by another transaction past the lock timeout, only the
 * claim is undone. The caller gets {@link InProgressException} and its transaction, earlier writes
 * included, can still commit. The same assertions on every database (one subclass each).
 */
abstract class JoinedClaimContract {
    static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String AUDIT = "rs_joined_audit_" + SUFFIX;
    static final String RECORDS = "rs_joined_records_" + SUFFIX;

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Hold hold() {
            return new Hold();
        }

        @Bean
        Transfers transfers(JdbcTemplate jdbc, Hold hold) {
            return new Transfers(jdbc, hold);
        }
    }

    /** Runs inside the method body, after its write: lets a test hold the key's transaction open. Apart: the service is a proxy. */
    static class Hold {
        final AtomicReference<Runnable> whileRunning = new AtomicReference<>(() -> { });
    }

    public static class Transfers {
        private final JdbcTemplate jdbc;
        private final Hold hold;

        Transfers(JdbcTemplate jdbc, Hold hold) {
            this.jdbc = jdbc;
            this.hold = hold;
        }

        @Idempotent(key = "#transferId", scope = Idempotent.Scope.SHARED)
        public String transfer(String transferId) {
            jdbc.update("INSERT INTO " + AUDIT + " (note) VALUES (?)", "transfer " + transferId);
            hold.whileRunning.get().run();
            return "done " + transferId;
        }
    }

    /** The application's data source on {@code url}, and the starter's record table, with a short lock timeout. */
    static void properties(DynamicPropertyRegistry registry, Supplier<Object> url, Supplier<Object> user,
            Supplier<Object> password, String lockTimeout) {
        registry.add("spring.datasource.url", url);
        registry.add("spring.datasource.username", user);
        registry.add("spring.datasource.password", password);
        registry.add("retrysafe.store.table", () -> RECORDS);
        registry.add("retrysafe.store.initialize-schema", () -> true);
        registry.add("retrysafe.store.lock-timeout", () -> lockTimeout);
        registry.add("spring.datasource.hikari.maximum-pool-size", () -> 4);
    }

    @Autowired
    Transfers transfers;
    @Autowired
    Hold hold;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    PlatformTransactionManager transactionManager;

    @Test
    void aLockTimeoutUndoesOnlyTheClaimAndTheCallersEarlierWriteCommits() throws Exception {
        String transferId = "t-" + UUID.randomUUID();
        String callerNote = "caller " + UUID.randomUUID();
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        hold.whileRunning.set(() -> {
            holding.countDown();
            TestApps.holdUntil(finish);
        });
        TransactionTemplate tx = new TransactionTemplate(transactionManager);
        CompletableFuture<String> holder = CompletableFuture.supplyAsync(
                () -> tx.<String>execute(status -> transfers.transfer(transferId)));
        try {
            assertThat(holding.await(30, TimeUnit.SECONDS)).as("the first call holds the key").isTrue();
            hold.whileRunning.set(() -> { });

            tx.executeWithoutResult(status -> {
                jdbc.update("INSERT INTO " + AUDIT + " (note) VALUES (?)", callerNote);
                assertThatThrownBy(() -> transfers.transfer(transferId)).isInstanceOf(InProgressException.class);
                jdbc.update("INSERT INTO " + AUDIT + " (note) VALUES (?)", callerNote + " after");
            });
        } finally {
            finish.countDown();
        }

        assertThat(notes(callerNote)).as("the caller's writes before and after the refused claim committed")
                .isEqualTo(1);
        assertThat(notes(callerNote + " after")).isEqualTo(1);
        assertThat(holder.get(30, TimeUnit.SECONDS)).isEqualTo("done " + transferId);
        assertThat(notes("transfer " + transferId)).as("the transfer ran once").isEqualTo(1);
        assertThat(tx.<String>execute(status -> transfers.transfer(transferId))).as("a retry replays")
                .isEqualTo("done " + transferId);
        assertThat(notes("transfer " + transferId)).isEqualTo(1);
    }

    private int notes(String note) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM " + AUDIT + " WHERE note = ?", Integer.class, note);
    }
}
