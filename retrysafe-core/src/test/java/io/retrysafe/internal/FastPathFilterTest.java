package io.retrysafe.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Attempt;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.AsyncFastPath;
import io.retrysafe.spi.FastPath.Cached;
import io.retrysafe.spi.RetrySafeListener;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/**
 * What only the non-blocking face adds to the decisions the servlet's {@code FastFilterExecutorTest} checks
 * through the blocking one: answers that arrive later, and stages that fail instead of calls that throw.
 */
class FastPathFilterTest {
    private static final IdempotencyKey KEY = KeyRules.DEFAULT.key("scope", "key-1");
    private static final Fingerprint FINGERPRINT = Fingerprint.sha256("request".getBytes(StandardCharsets.UTF_8));
    private static final OperationPolicy POLICY = OperationPolicy.ofDefaults();
    private static final StoredResponse RESPONSE = StoredResponse.of(201, Map.of(), "done".getBytes(StandardCharsets.UTF_8));

    /** A fast path whose every answer is completed later by the test, or fails; it records the calls made. */
    static final class LaterFastPath implements AsyncFastPath {
        final List<String> calls = new ArrayList<>();
        final List<CompletableFuture<?>> pending = new ArrayList<>();
        boolean fail;

        private <T> CompletableFuture<T> answer(String call) {
            calls.add(call);
            CompletableFuture<T> stage = new CompletableFuture<>();
            if (fail) {
                stage.completeExceptionally(new IllegalStateException("backend down"));
            } else {
                pending.add(stage);
            }
            return stage;
        }

        @Override
        public CompletionStage<Optional<Cached>> lookup(IdempotencyKey key, Fingerprint fingerprint) {
            return answer("lookup");
        }

        @Override
        public CompletionStage<Boolean> markInFlight(IdempotencyKey key, Fingerprint fingerprint) {
            return answer("markInFlight");
        }

        @Override
        public CompletionStage<Void> publish(IdempotencyKey key, Fingerprint fingerprint, StoredResponse response,
                Duration ttl) {
            return answer("publish");
        }

        @Override
        public CompletionStage<Void> clear(IdempotencyKey key) {
            return answer("clear");
        }

        @SuppressWarnings("unchecked")
        <T> void complete(T value) {
            ((CompletableFuture<T>) pending.remove(0)).complete(value);
        }
    }

    private final List<Outcome<?>> heard = new ArrayList<>();
    private final RetrySafeListener listener = new RetrySafeListener() {
        @Override
        public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
            heard.add(outcome);
        }
    };

    private FastPathFilter filter(AsyncFastPath fastPath) {
        return FastPathFilter.of(fastPath, "test", listener, Duration.ofHours(1), System::nanoTime);
    }

    @Test
    void aMarkerSetLaterLetsTheRequestGoToTheStoreOnlyOnceRedisAnswered() {
        LaterFastPath fastPath = new LaterFastPath();
        CompletableFuture<Optional<Outcome<StoredResponse>>> early = filter(fastPath)
                .early(KEY, FINGERPRINT, POLICY).toCompletableFuture();

        fastPath.complete(Optional.empty());
        assertThat(early).as("the marker is not set yet").isNotDone();
        fastPath.complete(true);

        assertThat(early).isCompletedWithValue(Optional.empty());
        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight");
        assertThat(heard).isEmpty();
    }

    @Test
    void aMarkerAlreadyThereIsLookedUpAgainAndACompletedRequestIsReplayedNotRefused() {
        LaterFastPath fastPath = new LaterFastPath();
        CompletableFuture<Optional<Outcome<StoredResponse>>> early = filter(fastPath)
                .early(KEY, FINGERPRINT, POLICY).toCompletableFuture();

        fastPath.complete(Optional.empty());
        fastPath.complete(false);
        fastPath.complete(Optional.of(new Cached.Replay(RESPONSE)));

        assertThat(early.join()).hasValueSatisfying(o -> assertThat(o).isInstanceOf(Outcome.Replayed.class));
        assertThat(fastPath.calls).containsExactly("lookup", "markInFlight", "lookup");
        assertThat(heard).hasSize(1);
    }

    @Test
    void failedStagesAreAMissAndTheRequestGoesToTheStore() {
        LaterFastPath fastPath = new LaterFastPath();
        fastPath.fail = true;
        FastPathFilter filter = filter(fastPath);

        assertThat(filter.early(KEY, FINGERPRINT, POLICY).toCompletableFuture()).isCompletedWithValue(Optional.empty());
        assertThat(filter.after(KEY, FINGERPRINT, POLICY, new Outcome.Executed<>(RESPONSE,
                new Attempt(KEY, 1), Outcome.Completion.STORED), filter.start()).toCompletableFuture()).isCompleted()
                .isNotCompletedExceptionally();
        assertThat(filter.after(KEY, FINGERPRINT, POLICY, null, filter.start()).toCompletableFuture())
                .isNotCompletedExceptionally();
        // A failed lookup ends the look-and-mark step: the request goes to the store unmarked.
        assertThat(fastPath.calls).containsExactly("lookup", "publish", "clear");
    }
}
