package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.retrysafe.InFlightKeys.Admission;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class InFlightKeysTest {
    private static final Fingerprint REQUEST = Fingerprint.sha256("request".getBytes(UTF_8));
    private static final Fingerprint OTHER = Fingerprint.sha256("other".getBytes(UTF_8));

    private final InFlightKeys keys = new InFlightKeys();
    private final IdempotencyKey key = IdempotencyKey.of("alice|POST /payments", "k-1");

    @Test
    void theFirstRequestHoldsTheKeyUntilClosedAndASecondCloseDoesNothing() {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);

        assertThat(first).isInstanceOf(Admission.Entered.class);
        assertThat(keys.admit(key, REQUEST, Duration.ZERO)).isInstanceOf(Admission.Busy.class);
        first.close();
        assertThat(keys.size()).isZero();
        try (Admission next = keys.admit(key, REQUEST, Duration.ZERO)) {
            assertThat(next).isInstanceOf(Admission.Entered.class);
            first.close();
            assertThat(keys.size()).as("a stale close never frees a later holder's key").isEqualTo(1);
        }
    }

    @Test
    void anotherScopeOrKeyIsAnotherEntry() {
        try (Admission a = keys.admit(key, REQUEST, Duration.ZERO);
                Admission b = keys.admit(IdempotencyKey.of("bob|POST /payments", "k-1"), REQUEST, Duration.ZERO);
                Admission c = keys.admit(IdempotencyKey.of(key.scope(), "k-2"), REQUEST, Duration.ZERO)) {
            assertThat(a).isInstanceOf(Admission.Entered.class);
            assertThat(b).isInstanceOf(Admission.Entered.class);
            assertThat(c).isInstanceOf(Admission.Entered.class);
        }
    }

    @Test
    void anotherRequestUnderAHeldKeyIsLeftToTheStore() {
        try (Admission first = keys.admit(key, REQUEST, Duration.ZERO)) {
            assertThat(keys.admit(key, OTHER, Duration.ofSeconds(30))).as("the record decides a mismatch")
                    .isInstanceOf(Admission.Unguarded.class);
        }
    }

    @Test
    void aDuplicateWaitsForTheHolderAndThenEnters() throws Exception {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> duplicate = CompletableFuture.supplyAsync(
                () -> keys.admit(key, REQUEST, Duration.ofSeconds(30)));
        await().atMost(Duration.ofSeconds(10)).until(() -> keys.waiting() == 1);

        first.close();

        try (Admission second = duplicate.get(10, TimeUnit.SECONDS)) {
            assertThat(second).isInstanceOf(Admission.Entered.class);
            assertThat(keys.waiting()).isZero();
        }
    }

    @Test
    void aDuplicateAdmittedWithoutBlockingChainsOnTheHolderAndThenEnters() throws Exception {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> duplicate = keys.admitAsync(key, REQUEST, Duration.ofSeconds(30));
        assertThat(duplicate).isNotDone();
        assertThat(keys.waiting()).isEqualTo(1);

        first.close();

        try (Admission second = duplicate.get(10, TimeUnit.SECONDS)) {
            assertThat(second).isInstanceOf(Admission.Entered.class);
            assertThat(keys.waiting()).isZero();
            assertThat(keys.size()).isEqualTo(1);
        }
        assertThat(keys.size()).isZero();
        assertThat(keys.admitAsync(key, OTHER, Duration.ZERO).get(10, TimeUnit.SECONDS)).as("free again")
                .isInstanceOf(Admission.Entered.class);
    }

    @Test
    void aDuplicateThatGivesUpWaitingNeverHoldsTheKey() {
        Admission first = keys.admit(key, REQUEST, Duration.ZERO);
        CompletableFuture<Admission> duplicate = keys.admitAsync(key, REQUEST, Duration.ofSeconds(30));

        duplicate.cancel(false);
        first.close();

        assertThat(keys.waiting()).isZero();
        assertThat(keys.size()).isZero();
    }

    @Test
    void theEngineFreesTheKeyWhenTheWorkThrows() {
        RetrySafe engine = RetrySafe.builder(new InMemoryIdempotencyStore()).build();
        IllegalStateException failure = new IllegalStateException("handler failed");

        assertThatThrownBy(() -> engine.oncePerInstance(key, REQUEST, Duration.ZERO, () -> {
            throw failure;
        })).isSameAs(failure);

        assertThat(engine.with(OperationPolicy.ofDefaults()).inFlight()).as("one registry per engine and its copies")
                .isSameAs(engine.inFlight());
        assertThat(engine.inFlight().size()).isZero();
    }

    @Test
    void theEngineAnswersADuplicateInFlightInProgressWithoutRunningIt() {
        RetrySafe engine = RetrySafe.builder(new InMemoryIdempotencyStore()).build();

        Outcome<String> duplicate = engine.oncePerInstance(key, REQUEST, Duration.ZERO,
                () -> engine.oncePerInstance(key, REQUEST, Duration.ZERO, () -> {
                    throw new AssertionError("the duplicate ran");
                }));

        assertThat(duplicate).isEqualTo(new Outcome.InProgress<>(OperationPolicy.DEFAULT_RETRY_AFTER));
    }
}
