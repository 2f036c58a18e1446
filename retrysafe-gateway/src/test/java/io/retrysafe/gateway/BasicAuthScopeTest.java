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
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;
import org.awaitility.Awaitility;
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
    void theCallerIsNamedAtOnceOnlyForCredentialsCheckedBefore() {
        BasicAuthScope scope = new BasicAuthScope(Map.of("alice", ALICE_HASH), counting, 1);
        Callers.Headers right = name -> "Authorization".equals(name) ? basic("alice", "alice-secret") : null;
        Callers.Headers wrong = name -> "Authorization".equals(name) ? basic("alice", "wrong") : null;

        assertThat(scope.callerAtOnce(name -> null)).as("no credentials: nobody, without a check")
                .isEqualTo(Callers.AtOnce.NOBODY);
        assertThat(scope.callerAtOnce(right)).as("not checked yet: it would wait").isNull();
        assertThat(scope.callerAtOnce(wrong)).isNull();
        assertThat(checked).isEmpty();

        assertThat(scope.caller(right)).isEqualTo("alice");
        assertThat(scope.caller(wrong)).isNull();

        assertThat(scope.callerAtOnce(right)).isEqualTo(new Callers.AtOnce("alice"));
        assertThat(scope.callerAtOnce(wrong)).isEqualTo(Callers.AtOnce.NOBODY);
        assertThat(checked).hasSize(2);
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

    /**
     * Clients that all start at once (a gateway just started or restarted) send the same credentials together:
     * one check answers them all, instead of one each, queued behind the others. The same holds for one guess
     * sent many times at once.
     */
    @Test
    void theSameCredentialsArrivingTogetherAreCheckedOnce() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        BasicAuthScope scope = new BasicAuthScope(Map.of("alice", ALICE_HASH), (password, hash) -> {
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return counting.test(password, hash);
        }, 1);
        List<Thread> started = new ArrayList<>();
        ThreadFactory recorded = task -> {
            Thread t = new Thread(task);
            synchronized (started) {
                started.add(t);
            }
            return t;
        };
        ExecutorService threads = Executors.newFixedThreadPool(16, recorded);
        try {
            List<Future<String>> right = new ArrayList<>();
            List<Future<String>> wrong = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                right.add(threads.submit(() -> scope.authenticate(basic("alice", "alice-secret"))));
                wrong.add(threads.submit(() -> scope.authenticate(basic("alice", "guess"))));
            }
            // All 16 are in: two hold the one permit or wait for it, the other 14 wait (parked) for an answer.
            Awaitility.await().atMost(30, TimeUnit.SECONDS).until(() -> {
                synchronized (started) {
                    return started.size() == 16 && started.stream().filter(t -> t.getState() == Thread.State.WAITING
                            || t.getState() == Thread.State.TIMED_WAITING).count() == 16;
                }
            });
            release.countDown();
            for (Future<String> r : right) {
                assertThat(r.get(30, TimeUnit.SECONDS)).isEqualTo("alice");
            }
            for (Future<String> w : wrong) {
                assertThat(w.get(30, TimeUnit.SECONDS)).isNull();
            }
        } finally {
            threads.shutdownNow();
        }

        assertThat(checked).as("one check for the right password, one for the guess").hasSize(2);
    }
}
