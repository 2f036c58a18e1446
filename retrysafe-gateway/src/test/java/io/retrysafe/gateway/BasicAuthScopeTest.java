package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.basic;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;
import org.junit.jupiter.api.Test;
import org.springframework.security.crypto.bcrypt.BCrypt;

/** What a password check costs, counted: the same for a wrong password and an unknown user, once per credential. */
class BasicAuthScopeTest {
    private static final String ALICE_HASH = BCrypt.hashpw("alice-secret", BCrypt.gensalt(4));

    /** The real check, counted, with the hashes it was asked about. */
    private final List<String> checked = new ArrayList<>();
    private final BiPredicate<String, String> counting = (password, hash) -> {
        synchronized (checked) {
            checked.add(hash);
        }
        return BCrypt.checkpw(password, hash);
    };

    @Test
    void anUnknownUserCostsOneCheckAsAWrongPasswordDoes() {
        BasicAuthScope scope = new BasicAuthScope(Map.of("alice", ALICE_HASH), counting, 1);

        assertThat(scope.authenticate(basic("mallory", "guess"))).isNull();
        assertThat(scope.authenticate(basic("alice", "guess"))).isNull();

        assertThat(checked).hasSize(2);
        assertThat(checked.get(0)).as("an unknown user is checked against a hash of the file's cost")
                .isNotEqualTo(ALICE_HASH).startsWith(ALICE_HASH.substring(0, 7));
        assertThat(checked.get(1)).isEqualTo(ALICE_HASH);
    }

    @Test
    void credentialsAreCheckedOnceRightOrWrong() {
        BasicAuthScope scope = new BasicAuthScope(Map.of("alice", ALICE_HASH), counting, 1);

        for (int i = 0; i < 5; i++) {
            assertThat(scope.authenticate(basic("alice", "alice-secret"))).isEqualTo("alice");
            assertThat(scope.authenticate(basic("alice", "wrong"))).isNull();
            assertThat(scope.authenticate(basic("mallory", "wrong"))).isNull();
        }

        assertThat(checked).hasSize(3);
    }

    @Test
    void noMoreChecksRunAtOnceThanAllowed() throws Exception {
        AtomicInteger running = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        CountDownLatch started = new CountDownLatch(2);
        CountDownLatch release = new CountDownLatch(1);
        BasicAuthScope scope = new BasicAuthScope(Map.of("alice", ALICE_HASH), (password, hash) -> {
            most.accumulateAndGet(running.incrementAndGet(), Math::max);
            started.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            running.decrementAndGet();
            return false;
        }, 2);
        ExecutorService threads = Executors.newFixedThreadPool(16);
        try {
            List<Future<String>> guesses = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                String password = "guess-" + i;
                guesses.add(threads.submit(() -> scope.authenticate(basic("alice", password))));
            }
            assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
            release.countDown();
            for (Future<String> g : guesses) {
                assertThat(g.get(30, TimeUnit.SECONDS)).isNull();
            }
        } finally {
            threads.shutdownNow();
        }

        assertThat(most.get()).isEqualTo(2);
    }
}
