package io.retrysafe.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.InProgress;
import io.retrysafe.spi.ClaimResult.Replay;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The contract for a standalone store on the asynchronous SPI ({@link AsyncIdempotencyStore}):
 * every test of {@link StandaloneStoreContract}, each call made through the asynchronous store and
 * awaited on the test's thread, races included; plus the races only an asynchronous store meets,
 * where one caller has many calls in flight at once without waiting for any, and a call made from
 * inside the store's own completion (its event loop) of the one before.
 *
 * <pre>{@code
 * class R2dbcStoreContractIT extends AsyncStandaloneStoreContract {
 *     protected AsyncIdempotencyStore asyncStore() { return store; }
 * }
 * }</pre>
 */
public abstract class AsyncStandaloneStoreContract extends StandaloneStoreContract {
    private static final int IN_FLIGHT = 64;

    /** The asynchronous store under test; may be the same instance for every test. */
    protected abstract AsyncIdempotencyStore asyncStore();

    /** The asynchronous store, each call awaited: what every inherited test runs against. */
    @Override
    protected final IdempotencyStore store() {
        return new BlockingView(asyncStore());
    }

    private static <T> List<T> all(String what, List<CompletableFuture<T>> stages) {
        return BlockingView.await(what, CompletableFuture.allOf(stages.toArray(CompletableFuture[]::new))
                .thenApply(done -> stages.stream().map(CompletableFuture::join).toList()));
    }

    private CompletableFuture<ClaimResult> claimLater(ClaimRequest request) {
        return asyncStore().tryClaim(request).toCompletableFuture();
    }

    @Test
    void claimsOfOneKeyAllInFlightAtOnceHaveOneWinner() {
        IdempotencyKey key = newKey();
        List<ClaimRequest> requests = IntStream.range(0, IN_FLIGHT)
                .mapToObj(i -> request(key, fingerprint, LONG_LEASE, LONG_RETENTION)).toList();

        List<ClaimResult> results = all(IN_FLIGHT + " claims in flight at once",
                requests.stream().map(this::claimLater).toList());

        List<Claimed> winners = results.stream().filter(Claimed.class::isInstance).map(Claimed.class::cast).toList();
        assertThat(winners).as("winners among %s claims of one key in flight at once: %s", IN_FLIGHT, results)
                .hasSize(1);
        assertThat(winners.get(0).attempt()).isEqualTo(1);
        assertThat(results).filteredOn(r -> !(r instanceof Claimed)).hasSize(IN_FLIGHT - 1)
                .allMatch(InProgress.class::isInstance);
        complete(key, winners.get(0).token(), response("winner"));
        assertReplays(key, response("winner"), "after the race");
    }

    @Test
    void claimsOfOneKeyFromManyThreadsEachWithManyInFlightHaveOneWinner() {
        IdempotencyKey key = newKey();
        int threads = 8;
        int perThread = 16;
        List<Callable<List<ClaimResult>>> tasks = IntStream.range(0, threads)
                .mapToObj(t -> (Callable<List<ClaimResult>>) () -> all(perThread + " claims in flight",
                        IntStream.range(0, perThread).mapToObj(i -> claimLater(
                                request(key, fingerprint, LONG_LEASE, LONG_RETENTION))).toList()))
                .toList();

        List<ClaimResult> results = Concurrently.run(threads + " threads with " + perThread + " claims in flight each",
                RACE_TIMEOUT, tasks).stream().flatMap(List::stream).toList();

        assertThat(results).filteredOn(Claimed.class::isInstance).as("winners among %s claims of one key",
                threads * perThread).hasSize(1);
        assertThat(results).filteredOn(r -> !(r instanceof Claimed)).allMatch(InProgress.class::isInstance);
    }

    @Test
    void completionsInFlightAtOnceCommitOnlyTheHoldersResponse() {
        IdempotencyKey key = newKey();
        Claimed holder = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        List<OwnerToken> tokens = new java.util.ArrayList<>(IntStream.range(0, IN_FLIGHT - 1)
                .mapToObj(i -> OwnerToken.random()).toList());
        tokens.add(IN_FLIGHT / 2, holder.token());

        List<FencedWrite> writes = all(IN_FLIGHT + " completions in flight at once", tokens.stream()
                .map(token -> asyncStore().complete(key, token, response(token.equals(holder.token()) ? "holder"
                        : "stale " + token), LONG_RETENTION).toCompletableFuture()).toList());

        assertThat(writes.get(IN_FLIGHT / 2)).as("the holder's completion").isInstanceOf(FencedWrite.Committed.class);
        assertThat(writes).filteredOn(FencedWrite.Committed.class::isInstance).as("committed completions").hasSize(1);
        assertThat(writes).filteredOn(w -> !(w instanceof FencedWrite.Committed))
                .allMatch(FencedWrite.LeaseLost.class::isInstance);
        assertReplays(key, response("holder"), "after the completions");
    }

    @Test
    void distinctKeysClaimedAllAtOnceAreEachClaimedThenCompletedThenReplayed() {
        List<IdempotencyKey> keys = IntStream.range(0, 4 * IN_FLIGHT)
                .mapToObj(i -> key("at-once-" + i + "-" + UUID.randomUUID())).toList();

        List<ClaimResult> claims = all(keys.size() + " claims of distinct keys", keys.stream()
                .map(k -> claimLater(request(k, fingerprint, LONG_LEASE, LONG_RETENTION))).toList());
        assertThat(claims).as("claims of distinct keys").allMatch(c -> c instanceof Claimed claimed
                && claimed.attempt() == 1);
        List<FencedWrite> writes = all(keys.size() + " completions", IntStream.range(0, keys.size())
                .mapToObj(i -> asyncStore().complete(keys.get(i), ((Claimed) claims.get(i)).token(),
                        response("key " + i), LONG_RETENTION).toCompletableFuture()).toList());
        assertThat(writes).allMatch(FencedWrite.Committed.class::isInstance);
        List<ClaimResult> replays = all(keys.size() + " replays", keys.stream()
                .map(k -> claimLater(request(k, fingerprint, LONG_LEASE, LONG_RETENTION))).toList());

        for (int i = 0; i < keys.size(); i++) {
            assertThat(replays.get(i)).as("claim of key %s after its completion", i).isInstanceOf(Replay.class);
            assertSameResponse(((Replay) replays.get(i)).response(), response("key " + i), "replay of key " + i);
        }
    }

    @Test
    void eachCallMayBeMadeFromTheCompletionOfTheOneBefore() {
        IdempotencyKey key = newKey();
        CompletionStage<Optional<IdempotencyRecord>> chain = asyncStore()
                .tryClaim(request(key, fingerprint, LONG_LEASE, LONG_RETENTION))
                .thenCompose(claim -> asyncStore().complete(key, ((Claimed) claim).token(), response("chained"),
                        LONG_RETENTION))
                .thenCompose(write -> {
                    assertCommitted(write, "a completion made from the claim's completion");
                    return asyncStore().tryClaim(request(key, fingerprint, LONG_LEASE, LONG_RETENTION));
                })
                .thenCompose(replay -> {
                    assertThat(replay).as("a claim made from the completion's completion").isInstanceOf(Replay.class);
                    return asyncStore().inspect(key);
                });

        IdempotencyRecord record = BlockingView.await("a chain of calls", chain).orElseThrow();

        assertThat(record.status()).isEqualTo(RecordStatus.COMPLETED);
        assertSameResponse(record.response().orElseThrow(), response("chained"), "the chained completion");
    }
}
