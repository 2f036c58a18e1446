package io.retrysafe.tck;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.FingerprintMismatch;
import io.retrysafe.spi.ClaimResult.InProgress;
import io.retrysafe.spi.ClaimResult.Replay;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.Test;

/**
 * The contract every {@link IdempotencyStore} passes, in the parts common to both kinds of store.
 * A store's test extends {@link StandaloneStoreContract} (claims committed at once, leases expire)
 * or {@link TransactionalStoreContract} (claims live inside a transaction until it commits), each
 * adding the tests only its kind can pass, so no test of either is ever skipped:
 *
 * <pre>{@code
 * class PostgresStoreContractIT extends StandaloneStoreContract {
 *     protected IdempotencyStore store() { return store; }
 * }
 * }</pre>
 *
 * <p>A store on the asynchronous SPI extends {@link AsyncStandaloneStoreContract}: the same tests,
 * each call made through its stages, plus races of many calls in flight at once.
 *
 * <p>Every test works in a fresh random scope ({@code "tck-" + UUID}), so a store backed by a shared
 * database needs no cleanup between tests, and the tests may share one store instance. Tests never
 * sleep: time-dependent tests use leases and retentions of a few hundred milliseconds and poll the
 * store (its own clock decides) with a bound.
 */
public abstract sealed class IdempotencyStoreContract permits StandaloneStoreContract, TransactionalStoreContract {

    /** A lease that does not run out during a test. */
    protected static final Duration LONG_LEASE = Duration.ofSeconds(30);
    /** A retention that does not run out during a test. */
    protected static final Duration LONG_RETENTION = Duration.ofHours(1);
    /**
     * A lease or retention the tests wait out. Long enough that a store on a loaded machine still
     * answers the checks made before it runs out (a completion and a replay took over 300 ms on a
     * busy CI host), short enough that waiting it out stays cheap.
     */
    protected static final Duration SHORT = Duration.ofSeconds(1);
    /** Bound for waiting out {@link #SHORT}. */
    protected static final Duration AWAIT = Duration.ofSeconds(10);
    /** Bound for the race tests; generous, because a transactional store may block up to its lock timeout. */
    protected static final Duration RACE_TIMEOUT = Duration.ofSeconds(90);

    static final Duration TIMESTAMP_TOLERANCE = Duration.ofSeconds(1);

    final String scope = "tck-" + UUID.randomUUID();
    final Fingerprint fingerprint = Fingerprint.sha256("POST /payments {\"amount\":100}".getBytes(UTF_8));
    final Fingerprint otherFingerprint = Fingerprint.sha256("POST /payments {\"amount\":999}".getBytes(UTF_8));

    /** The store under test; may be the same instance for every test. */
    protected abstract IdempotencyStore store();

    /**
     * True when a claim's lease can expire while its holder lives (standalone stores); false for a
     * transactional store, whose claim is invisible until commit. Fixed by the two subclasses.
     */
    abstract boolean leasesExpire();

    /**
     * True when release() leaves a FAILED record whose attempt count continues (standalone); false
     * when it removes the claim (a transactional rollback). Fixed by the two subclasses.
     */
    abstract boolean releaseKeepsRecord();

    /**
     * True for a store that deletes expired records itself (Redis expiry): its
     * {@link IdempotencyStore#purgeExpired} finds nothing left to delete and returns 0.
     */
    protected boolean expiresRecordsItself() {
        return false;
    }

    /** This test's scope; unique per test. */
    protected final String scope() {
        return scope;
    }

    // ------------------------------------------------------------------------------------------
    // Claim
    // ------------------------------------------------------------------------------------------

    @Test
    void claimOfAbsentKeyIsClaimedAsFirstAttemptWithTheRequestsToken() {
        IdempotencyKey key = newKey();
        ClaimRequest request = request(key, fingerprint, LONG_LEASE, LONG_RETENTION);

        Claimed claimed = expect(Claimed.class, store().tryClaim(request), "first claim of an absent key");

        assertThat(claimed.attempt()).as("attempt of the first claim of a key").isEqualTo(1);
        assertThat(claimed.token()).as("a claim installs the token of its request").isEqualTo(request.token());
        complete(key, claimed.token(), response("done"));
    }

    @Test
    void secondClaimWhileHeldIsInProgressWithTheRemainingLease() {
        IdempotencyKey key = newKey();
        Claimed holder = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        InProgress inProgress = expect(InProgress.class, claim(key, fingerprint),
                "second claim with the same fingerprint while the first holds the key");

        assertThat(inProgress.leaseRemaining()).as("leaseRemaining of a held key (lease %s)", LONG_LEASE)
                .isPositive()
                .isLessThanOrEqualTo(LONG_LEASE);
        complete(key, holder.token(), response("done"));
    }

    // ------------------------------------------------------------------------------------------
    // Complete and replay
    // ------------------------------------------------------------------------------------------

    @Test
    void completedKeyReplaysStatusHeadersAndBinaryBodyExactly() {
        IdempotencyKey key = newKey();
        Map<String, List<String>> headers = new LinkedHashMap<>();
        headers.put("Content-Type", List.of("application/octet-stream"));
        headers.put("Location", List.of("/payments/42"));
        headers.put("Link", List.of("</a>; rel=\"first\"", "</c>; rel=\"last\"", "</b>; rel=\"next\""));
        headers.put("X-Multi", List.of("zulu", "alpha", "zulu", "mike"));
        headers.put("ETag", List.of("\"v1\""));
        byte[] body = new byte[1024];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i % 3 == 0 ? 0 : i);
        }
        StoredResponse stored = StoredResponse.of(201, headers, body);
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        assertCommitted(store().complete(key, claimed.token(), stored, LONG_RETENTION), "complete by the holder");

        assertSameResponse(expect(Replay.class, claim(key, fingerprint), "claim of a completed key").response(),
                stored, "replay of a response with several multi-valued headers and a binary body");
    }

    @Test
    void completedKeyReplaysOneMebibyteBody() {
        IdempotencyKey key = newKey();
        byte[] body = new byte[1024 * 1024];
        new Random(42).nextBytes(body);
        body[0] = 0;
        body[body.length - 1] = 0;
        StoredResponse stored = StoredResponse.of(200, Map.of("Content-Type", List.of("application/octet-stream")),
                body);
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        assertCommitted(store().complete(key, claimed.token(), stored, LONG_RETENTION), "complete with a 1 MiB body");

        assertSameResponse(expect(Replay.class, claim(key, fingerprint), "claim of a completed key").response(),
                stored, "replay of a 1 MiB body");
    }

    @Test
    void completedKeyReplaysEmptyBodyAndNoHeaders() {
        IdempotencyKey key = newKey();
        StoredResponse stored = StoredResponse.of(204, Map.of(), new byte[0]);
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        assertCommitted(store().complete(key, claimed.token(), stored, LONG_RETENTION), "complete with an empty body");

        assertSameResponse(expect(Replay.class, claim(key, fingerprint), "claim of a completed key").response(),
                stored, "replay of an empty response");
    }

    @Test
    void completedRecordCannotBeCompletedAgain() {
        IdempotencyKey key = newKey();
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        complete(key, claimed.token(), response("first"));

        assertLeaseLost(store().complete(key, claimed.token(), response("second"), LONG_RETENTION),
                "a second complete with the token that completed the key");
        assertLeaseLost(store().release(key, claimed.token()), "release of a completed key");

        assertReplays(key, response("first"), "after a second complete and a release were refused");
    }

    // ------------------------------------------------------------------------------------------
    // Fingerprint mismatch
    // ------------------------------------------------------------------------------------------

    @Test
    void fingerprintMismatchAgainstCompletedRecordChangesNothing() {
        IdempotencyKey key = newKey();
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        complete(key, claimed.token(), response("original"));
        IdempotencyRecord before = inspectPresent(key, "completed record");

        expect(FingerprintMismatch.class, claim(key, otherFingerprint), "claim of a completed key with another fingerprint");

        IdempotencyRecord after = inspectPresent(key, "completed record after a mismatching claim");
        assertThat(after.status()).as("status after a mismatching claim").isEqualTo(RecordStatus.COMPLETED);
        assertThat(after.fingerprint()).as("fingerprint after a mismatching claim").isEqualTo(fingerprint);
        assertThat(after.attempt()).as("attempt after a mismatching claim").isEqualTo(before.attempt());
        assertReplays(key, response("original"), "after a mismatching claim");
    }

    @Test
    void fingerprintMismatchAgainstInProgressRecordChangesNothing() {
        IdempotencyKey key = newKey();
        Claimed holder = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        ClaimResult mismatch = claim(key, otherFingerprint);

        if (leasesExpire()) {
            expect(FingerprintMismatch.class, mismatch, "claim of a held key with another fingerprint");
            IdempotencyRecord after = inspectPresent(key, "held record after a mismatching claim");
            assertThat(after.status()).as("status after a mismatching claim").isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(after.fingerprint()).as("fingerprint after a mismatching claim").isEqualTo(fingerprint);
            assertThat(after.attempt()).as("attempt after a mismatching claim").isEqualTo(1);
        } else {
            // A transactional store cannot see an uncommitted claim's fingerprint; refusing as in progress is right too.
            assertThat(mismatch).as("claim of a held key with another fingerprint must not be claimed")
                    .isInstanceOfAny(FingerprintMismatch.class, InProgress.class);
        }
        assertCommitted(store().complete(key, holder.token(), response("original"), LONG_RETENTION),
                "complete by the holder after a mismatching claim");
        assertReplays(key, response("original"), "after a mismatching claim while in progress");
        expect(FingerprintMismatch.class, claim(key, otherFingerprint), "claim with another fingerprint once completed");
    }

    // ------------------------------------------------------------------------------------------
    // Release
    // ------------------------------------------------------------------------------------------

    @Test
    void releasedKeyIsClaimedAgainAsNextAttempt() {
        IdempotencyKey key = newKey();
        Claimed first = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        assertCommitted(store().release(key, first.token()), "release by the holder");

        ClaimRequest retryRequest = request(key, fingerprint, LONG_LEASE, LONG_RETENTION);
        Claimed retry = expect(Claimed.class, store().tryClaim(retryRequest), "claim of a released key");
        assertThat(retry.attempt()).as("attempt of the claim after a release")
                .isEqualTo(releaseKeepsRecord() ? 2 : 1);
        assertThat(retry.token()).as("token of the claim after a release").isEqualTo(retryRequest.token());
        assertCommitted(store().complete(key, retry.token(), response("second"), LONG_RETENTION),
                "complete by the new holder");
        assertReplays(key, response("second"), "after release and retry");
    }

    @Test
    void releasedTokenNoLongerHoldsTheKey() {
        IdempotencyKey key = newKey();
        Claimed first = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        assertCommitted(store().release(key, first.token()), "release by the holder");

        assertLeaseLost(store().release(key, first.token()), "a second release with the released token");
        assertLeaseLost(store().complete(key, first.token(), response("late"), LONG_RETENTION),
                "complete with the released token");

        Claimed retry = expect(Claimed.class, claim(key, fingerprint), "claim after the released token was refused");
        complete(key, retry.token(), response("retry"));
        assertReplays(key, response("retry"), "after the released token was refused");
    }

    // ------------------------------------------------------------------------------------------
    // Fencing
    // ------------------------------------------------------------------------------------------

    @Test
    void tokenThatNeverHeldTheKeyCannotCompleteOrRelease() {
        IdempotencyKey key = newKey();
        Claimed holder = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        OwnerToken stranger = OwnerToken.random();

        assertLeaseLost(store().complete(key, stranger, response("stranger"), LONG_RETENTION),
                "complete with a token that never held the key");
        assertLeaseLost(store().release(key, stranger), "release with a token that never held the key");

        if (leasesExpire()) {
            IdempotencyRecord record = inspectPresent(key, "held record after a stranger's writes");
            assertThat(record.status()).as("status after a stranger's writes").isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(record.attempt()).as("attempt after a stranger's writes").isEqualTo(1);
            assertThat(record.response()).as("response after a stranger's complete").isEmpty();
        }
        expect(InProgress.class, claim(key, fingerprint), "claim after a stranger's writes were refused");
        assertCommitted(store().complete(key, holder.token(), response("holder"), LONG_RETENTION),
                "complete by the holder after a stranger's writes");
        assertReplays(key, response("holder"), "after a stranger's writes");
    }

    @Test
    void completeOrReleaseOfAbsentKeyIsLeaseLost() {
        IdempotencyKey key = newKey();

        assertLeaseLost(store().complete(key, OwnerToken.random(), response("ghost"), LONG_RETENTION),
                "complete of a key never claimed");
        assertLeaseLost(store().release(key, OwnerToken.random()), "release of a key never claimed");

        assertThat(store().inspect(key)).as("inspect after writes to a key never claimed").isEmpty();
        Claimed claimed = expect(Claimed.class, claim(key, fingerprint), "claim after writes to a key never claimed");
        assertThat(claimed.attempt()).as("attempt after writes to a key never claimed").isEqualTo(1);
        complete(key, claimed.token(), response("done"));
    }

    // ------------------------------------------------------------------------------------------
    // Expiry and purge
    // ------------------------------------------------------------------------------------------

    @Test
    void expiredCompletedRecordIsAbsent() {
        IdempotencyKey key = newKey();
        Claimed first = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        assertCommitted(store().complete(key, first.token(), response("short-lived"), SHORT),
                "complete with a retention of " + SHORT);
        assertReplays(key, response("short-lived"), "before the retention ran out");

        awaitAbsent(key);

        Claimed again = expect(Claimed.class, claim(key, fingerprint), "claim of a key whose record expired");
        assertThat(again.attempt()).as("attempt of a claim of an expired key").isEqualTo(1);
        complete(key, again.token(), response("second life"));
        assertReplays(key, response("second life"), "after the key was claimed again");
    }

    @Test
    void expiredRecordDoesNotRefuseAnotherFingerprint() {
        IdempotencyKey key = newKey();
        Claimed first = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        assertCommitted(store().complete(key, first.token(), response("short-lived"), SHORT),
                "complete with a retention of " + SHORT);

        awaitAbsent(key);

        Claimed again = expect(Claimed.class, claim(key, otherFingerprint),
                "claim with another fingerprint of a key whose record expired");
        assertThat(again.attempt()).as("attempt of a claim of an expired key").isEqualTo(1);
        complete(key, again.token(), response("other request"));
        expect(FingerprintMismatch.class, claim(key, fingerprint), "the new record carries the new fingerprint");
    }

    @Test
    void purgeExpiredDeletesOnlyExpiredRecordsAtMostLimitPerCall() {
        List<IdempotencyKey> expiring = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            IdempotencyKey key = newKey();
            complete(key, claimFirst(key, LONG_LEASE, LONG_RETENTION).token(), SHORT, response("expiring " + i));
            expiring.add(key);
        }
        List<IdempotencyKey> live = List.of(newKey(), newKey());
        for (IdempotencyKey key : live) {
            complete(key, claimFirst(key, LONG_LEASE, LONG_RETENTION).token(), response("live " + key.value()));
        }
        IdempotencyKey held = newKey();
        // A shared database may hold many expired records of earlier runs: the lease outlasts draining them.
        Claimed holder = claimFirst(held, Duration.ofMinutes(10), LONG_RETENTION);
        expiring.forEach(this::awaitAbsent);

        if (expiresRecordsItself()) {
            assertThat(store().purgeExpired(2)).as("purgeExpired(2) of a store that expires records itself")
                    .isZero();
        } else {
            int first = store().purgeExpired(2);
            assertThat(first).as("purgeExpired(2) with at least %d expired records", expiring.size()).isEqualTo(2);
            int second = store().purgeExpired(2);
            assertThat(second).as("purgeExpired(2) deletes at most 2").isBetween(0, 2);
            int total = first + second;
            int calls = 0;
            int deleted;
            do {
                deleted = store().purgeExpired(1_000);
                assertThat(deleted).as("purgeExpired(1000) deletes at most 1000").isBetween(0, 1_000);
                total += deleted;
            } while (deleted > 0 && ++calls < 100_000);
            assertThat(total).as("records deleted by purgeExpired in total, with %d of ours expired", expiring.size())
                    .isGreaterThanOrEqualTo(expiring.size());
        }

        for (IdempotencyKey key : live) {
            assertReplays(key, response("live " + key.value()), "a live record after purgeExpired");
        }
        expect(InProgress.class, claim(held, fingerprint), "a held record after purgeExpired");
        assertCommitted(store().complete(held, holder.token(), response("held"), LONG_RETENTION),
                "complete by a holder after purgeExpired");
        for (IdempotencyKey key : expiring) {
            Claimed again = expect(Claimed.class, claim(key, fingerprint), "claim of a purged key");
            assertThat(again.attempt()).as("attempt of a claim of a purged key").isEqualTo(1);
            complete(key, again.token(), response("again"));
        }
    }

    // ------------------------------------------------------------------------------------------
    // Scope and keys
    // ------------------------------------------------------------------------------------------

    @Test
    void sameKeyInTwoScopesIsTwoIndependentRecords() {
        String value = "shared-" + UUID.randomUUID();
        IdempotencyKey mine = IdempotencyKey.of(scope, value);
        IdempotencyKey theirs = IdempotencyKey.of(scope + "-other", value);
        Claimed myClaim = claimFirst(mine, LONG_LEASE, LONG_RETENTION);

        Claimed theirClaim = expect(Claimed.class,
                store().tryClaim(request(theirs, otherFingerprint, LONG_LEASE, LONG_RETENTION)),
                "claim of the same key value in another scope, with another fingerprint, while held in the first");
        assertThat(theirClaim.attempt()).as("attempt in the other scope").isEqualTo(1);

        assertLeaseLost(store().complete(theirs, myClaim.token(), response("mine"), LONG_RETENTION),
                "complete in the other scope with this scope's token");
        assertCommitted(store().complete(mine, myClaim.token(), response("mine"), LONG_RETENTION), "complete in scope");
        assertCommitted(store().release(theirs, theirClaim.token()), "release in the other scope");

        assertReplays(mine, response("mine"), "in the first scope after the other scope released");
        assertThat(inspectPresent(mine, "record in the first scope").key()).isEqualTo(mine);
        Claimed retry = expect(Claimed.class, store().tryClaim(request(theirs, otherFingerprint, LONG_LEASE, LONG_RETENTION)),
                "claim in the other scope after its release");
        complete(theirs, retry.token(), response("theirs"));
        assertReplays(mine, response("mine"), "in the first scope");
        assertThat(expect(Replay.class, store().tryClaim(request(theirs, otherFingerprint, LONG_LEASE, LONG_RETENTION)),
                "claim in the other scope once completed").response())
                .as("replay in the other scope").isEqualTo(response("theirs"));
    }

    @Test
    void keyOfMaximumLengthIsStoredAndMatchedExactly() {
        String base = UUID.randomUUID().toString();
        String longest = (base + "x".repeat(255)).substring(0, 254) + "1";
        List<String> values = List.of(longest, longest.substring(0, 254) + "2", "2" + longest.substring(1),
                longest.substring(0, 254));
        assertThat(longest).hasSize(255);

        assertStoredAndMatchedExactly(values);
    }

    @Test
    void keysWithEveryPrintableCharacterAreStoredAndMatchedExactly() {
        String printable = IntStream.rangeClosed(0x20, 0x7e).mapToObj(c -> String.valueOf((char) c))
                .collect(Collectors.joining());
        List<String> values = List.of(
                printable,
                new StringBuilder(printable).reverse().toString(),
                "a", "A", "ab", "aB", "Ab", "AB",
                "%", "_", "a%", "a_", "%b", "_b", "a%b", "a_b", "axb", "a\\%", "a\\_", "%%", "__",
                "\\", "\\\\", "a\\b", "a\\\\b", "a\\",
                "'", "''", "a'b", "\"", "a\"b", "`", "a`b",
                "a b", "a ", "a  ", " a", " ", "  ",
                "*", "?", "[a]", "[^a]", "{a}", "$1", "a;b", "--", "/*", "a|b", "a=b", "a&b", "#", "~", "^",
                "a'); DROP TABLE idempotency_keys; --");

        assertStoredAndMatchedExactly(values);
    }

    void assertStoredAndMatchedExactly(List<String> rawValues) {
        Set<String> values = new LinkedHashSet<>();
        for (String v : rawValues) {
            values.add(v);
        }
        for (String value : values) {
            IdempotencyKey key = key(value);
            ClaimRequest request = request(key, fingerprint, LONG_LEASE, LONG_RETENTION);
            ClaimResult result = store().tryClaim(request);
            Claimed claimed = expect(Claimed.class, result, "first claim of key " + quote(value)
                    + " (a Replay or InProgress means the store matched it to another key: LIKE wildcards, "
                    + "escaping, trimming or case folding)");
            assertThat(claimed.attempt()).as("attempt of the first claim of key %s", quote(value)).isEqualTo(1);
            assertCommitted(store().complete(key, claimed.token(), keyEcho(value), LONG_RETENTION),
                    "complete of key " + quote(value));
        }
        for (String value : values) {
            IdempotencyKey key = key(value);
            StoredResponse replayed = expect(Replay.class, claim(key, fingerprint), "claim of completed key " + quote(value))
                    .response();
            assertThat(new String(replayed.body(), UTF_8)).as("replay of key %s must be its own response", quote(value))
                    .isEqualTo(value);
            IdempotencyRecord record = inspectPresent(key, "record of key " + quote(value));
            assertThat(record.key().value()).as("key value as stored").isEqualTo(value);
            assertThat(record.key().scope()).as("scope as stored").isEqualTo(scope);
        }
    }

    // ------------------------------------------------------------------------------------------
    // Inspect
    // ------------------------------------------------------------------------------------------

    @Test
    void inspectOfAbsentKeyIsEmpty() {
        assertThat(store().inspect(newKey())).as("inspect of a key never claimed").isEmpty();
    }

    @Test
    void inspectReportsCompletedRecord() {
        IdempotencyKey key = newKey();
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        StoredResponse stored = response("inspected");
        complete(key, claimed.token(), stored);

        IdempotencyRecord record = inspectPresent(key, "completed record");

        assertThat(record.key()).as("key").isEqualTo(key);
        assertThat(record.status()).as("status").isEqualTo(RecordStatus.COMPLETED);
        assertThat(record.attempt()).as("attempt").isEqualTo(1);
        assertThat(record.fingerprint()).as("fingerprint").isEqualTo(fingerprint);
        assertThat(record.createdAt()).as("createdAt").isNotNull();
        assertThat(record.completedAt()).as("completedAt of a completed record").isNotNull()
                .isAfterOrEqualTo(record.createdAt());
        assertThat(record.expiresAt()).as("expiresAt").isNotNull().isAfterOrEqualTo(record.completedAt());
        assertThat(Duration.between(record.completedAt(), record.expiresAt()))
                .as("expiresAt - completedAt of a record completed with retention %s", LONG_RETENTION)
                .isBetween(LONG_RETENTION.minus(TIMESTAMP_TOLERANCE), LONG_RETENTION.plus(TIMESTAMP_TOLERANCE));
        assertThat(record.response()).as("response of a completed record").isPresent();
        assertSameResponse(record.response().get(), stored, "inspected response");
    }

    // ------------------------------------------------------------------------------------------
    // Races
    // ------------------------------------------------------------------------------------------

    @Test
    void concurrentClaimsOfOneKeyHaveOneWinnerThatCompletesAfterAllAnswered() {
        IdempotencyKey key = newKey();
        List<ClaimRequest> requests = IntStream.range(0, 32)
                .mapToObj(i -> request(key, fingerprint, LONG_LEASE, LONG_RETENTION)).toList();

        List<ClaimResult> results = Concurrently.run("32 concurrent claims of one key", RACE_TIMEOUT,
                requests.stream().map(r -> (Callable<ClaimResult>) () -> store().tryClaim(r)).toList());

        List<Claimed> winners = results.stream().filter(Claimed.class::isInstance).map(Claimed.class::cast).toList();
        assertThat(winners).as("claims that won among 32 concurrent claims of one key: %s", results).hasSize(1);
        Claimed winner = winners.get(0);
        assertThat(winner.attempt()).as("attempt of the winner").isEqualTo(1);
        assertThat(requests.stream().map(ClaimRequest::token)).as("the winner's token is its request's")
                .contains(winner.token());
        assertThat(results).as("answers to the losers while the winner has not completed")
                .filteredOn(r -> !(r instanceof Claimed)).hasSize(31).allMatch(InProgress.class::isInstance);

        complete(key, winner.token(), response("winner"));
        assertReplays(key, response("winner"), "after the race");
    }

    @Test
    void concurrentClaimsOfOneKeyHaveOneWinnerThatCompletesAtOnce() {
        IdempotencyKey key = newKey();
        record Answer(ClaimRequest request, ClaimResult result, FencedWrite write) {
        }
        List<Callable<Answer>> tasks = IntStream.range(0, 32).mapToObj(i -> (Callable<Answer>) () -> {
            ClaimRequest request = request(key, fingerprint, LONG_LEASE, LONG_RETENTION);
            ClaimResult result = store().tryClaim(request);
            FencedWrite write = result instanceof Claimed c
                    ? store().complete(key, c.token(), response("winner"), LONG_RETENTION) : null;
            return new Answer(request, result, write);
        }).toList();

        List<Answer> answers = Concurrently.run("32 concurrent claims of one key, completed at once", RACE_TIMEOUT, tasks);

        List<Answer> winners = answers.stream().filter(a -> a.result() instanceof Claimed).toList();
        assertThat(winners).as("claims that won among 32 concurrent claims of one key: %s", answers).hasSize(1);
        Answer winner = winners.get(0);
        assertThat(((Claimed) winner.result()).token()).as("winner's token").isEqualTo(winner.request().token());
        assertThat(((Claimed) winner.result()).attempt()).as("winner's attempt").isEqualTo(1);
        assertCommitted(winner.write(), "complete by the winner");
        for (Answer loser : answers) {
            if (loser == winner) {
                continue;
            }
            assertThat(loser.result()).as("a loser's answer").isInstanceOfAny(InProgress.class, Replay.class);
            if (loser.result() instanceof Replay replay) {
                assertSameResponse(replay.response(), response("winner"), "a loser's replay");
            }
        }
        assertReplays(key, response("winner"), "after the race");
    }

    @Test
    void distinctKeysClaimedFromManyThreadsAreEachClaimedExactlyOnce() {
        int threads = 8;
        int keysPerPair = 250;
        List<IdempotencyKey> keys = IntStream.range(0, threads / 2 * keysPerPair)
                .mapToObj(i -> key("many-" + i + "-" + UUID.randomUUID())).toList();
        Map<IdempotencyKey, AtomicInteger> claims = new ConcurrentHashMap<>();
        keys.forEach(k -> claims.put(k, new AtomicInteger()));
        List<String> problems = Collections.synchronizedList(new ArrayList<>());

        List<Callable<Void>> tasks = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int pair = t / 2;
            List<IdempotencyKey> mine = new ArrayList<>(keys.subList(pair * keysPerPair, (pair + 1) * keysPerPair));
            if (t % 2 == 1) {
                Collections.reverse(mine);
            }
            tasks.add(() -> {
                for (IdempotencyKey key : mine) {
                    ClaimRequest request = request(key, fingerprint, LONG_LEASE, LONG_RETENTION);
                    ClaimResult result = store().tryClaim(request);
                    if (result instanceof Claimed c) {
                        claims.get(key).incrementAndGet();
                        FencedWrite write = store().complete(key, c.token(), keyEcho(key.value()), LONG_RETENTION);
                        if (!(write instanceof FencedWrite.Committed)) {
                            problems.add(key.value() + ": winner's complete was " + write);
                        }
                    } else if (!(result instanceof InProgress) && !(result instanceof Replay)) {
                        problems.add(key.value() + ": unexpected " + result);
                    }
                }
                return null;
            });
        }

        Concurrently.run(keys.size() + " keys claimed by " + threads + " threads", RACE_TIMEOUT, tasks);

        assertThat(problems).as("problems seen by the claiming threads").isEmpty();
        Map<String, Integer> notOnce = claims.entrySet().stream().filter(e -> e.getValue().get() != 1)
                .collect(Collectors.toMap(e -> e.getKey().value(), e -> e.getValue().get()));
        assertThat(notOnce).as("keys not claimed exactly once (key -> times claimed)").isEmpty();
        for (IdempotencyKey key : keys) {
            StoredResponse replayed = expect(Replay.class, claim(key, fingerprint), "claim of " + key.value()).response();
            assertThat(new String(replayed.body(), UTF_8)).as("replay of %s", key.value()).isEqualTo(key.value());
        }
    }

    @Test
    void concurrentCompletionsWithHolderAndStaleTokensCommitExactlyOnce() {
        IdempotencyKey key = newKey();
        List<OwnerToken> stale = new ArrayList<>();
        Claimed holder;
        if (leasesExpire()) {
            Claimed old = claimFirst(key, SHORT, LONG_RETENTION);
            stale.add(old.token());
            holder = expect(Claimed.class, waiting("takeover of key " + key.value() + " after its lease of " + SHORT)
                    .until(() -> claim(key, fingerprint), r -> !(r instanceof InProgress)), "takeover");
        } else {
            holder = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        }
        while (stale.size() < 16) {
            stale.add(OwnerToken.random());
        }
        record Write(String who, FencedWrite result) {
        }
        List<Callable<Write>> tasks = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            String who = "holder-" + i;
            tasks.add(() -> new Write(who, store().complete(key, holder.token(), response(who), LONG_RETENTION)));
        }
        for (int i = 0; i < stale.size(); i++) {
            String who = "stale-" + i;
            OwnerToken token = stale.get(i);
            tasks.add(() -> new Write(who, store().complete(key, token, response(who), LONG_RETENTION)));
        }

        List<Write> writes = Concurrently.run("32 concurrent completions of one key", RACE_TIMEOUT, tasks);

        List<Write> committed = writes.stream().filter(w -> w.result() instanceof FencedWrite.Committed).toList();
        assertThat(committed).as("completions that committed: %s", writes).hasSize(1);
        assertThat(committed.get(0).who()).as("the completion that committed").startsWith("holder-");
        assertReplays(key, response(committed.get(0).who()), "after concurrent completions");
    }

    // ------------------------------------------------------------------------------------------
    // Helpers
    // ------------------------------------------------------------------------------------------

    /** A new key in this test's scope. */
    protected final IdempotencyKey newKey() {
        return IdempotencyKey.of(scope, "key-" + UUID.randomUUID());
    }

    /** The key {@code value} in this test's scope. */
    protected final IdempotencyKey key(String value) {
        return IdempotencyKey.of(scope, value);
    }

    static ClaimRequest request(IdempotencyKey key, Fingerprint fp, Duration lease, Duration retention) {
        return new ClaimRequest(key, fp, OwnerToken.random(), lease, retention);
    }

    ClaimResult claim(IdempotencyKey key, Fingerprint fp) {
        return store().tryClaim(request(key, fp, LONG_LEASE, LONG_RETENTION));
    }

    /** Claims a key that must be absent: Claimed, attempt 1, with the request's token. */
    Claimed claimFirst(IdempotencyKey key, Duration lease, Duration retention) {
        ClaimRequest request = request(key, fingerprint, lease, retention);
        Claimed claimed = expect(Claimed.class, store().tryClaim(request), "first claim of key " + key.value());
        assertThat(claimed.attempt()).as("attempt of the first claim of key %s", key.value()).isEqualTo(1);
        assertThat(claimed.token()).as("token of the first claim of key %s", key.value()).isEqualTo(request.token());
        return claimed;
    }

    void complete(IdempotencyKey key, OwnerToken token, StoredResponse response) {
        complete(key, token, LONG_RETENTION, response);
    }

    void complete(IdempotencyKey key, OwnerToken token, Duration retention, StoredResponse response) {
        assertCommitted(store().complete(key, token, response, retention), "complete of key " + key.value() + " by its holder");
    }

    void assertReplays(IdempotencyKey key, StoredResponse expected, String context) {
        Replay replay = expect(Replay.class, claim(key, fingerprint), "claim of a completed key " + context);
        assertSameResponse(replay.response(), expected, "replay " + context);
    }

    IdempotencyRecord inspectPresent(IdempotencyKey key, String what) {
        Optional<IdempotencyRecord> record = store().inspect(key);
        assertThat(record).as("inspect of %s (key %s)", what, key.value()).isPresent();
        return record.get();
    }

    /** Polls the store's own view until the key's record is expired (inspect is empty). */
    void awaitAbsent(IdempotencyKey key) {
        waiting("inspect of key " + key.value() + " to be empty once its retention of " + SHORT + " ran out")
                .until(() -> store().inspect(key).isEmpty());
    }

    /**
     * Waits until the store's clock is past the lease of every claim made before this call with a
     * lease of at most {@code lease}: it claims a probe key with that lease now and polls until the
     * probe can be taken over. Nothing of the key under test is touched.
     */
    void awaitLeaseExpiredAfter(Duration lease) {
        IdempotencyKey probe = key("probe-" + UUID.randomUUID());
        claimFirst(probe, lease, LONG_RETENTION);
        ClaimResult result = waiting("a probe claim's lease of " + lease + " to expire")
                .until(() -> claim(probe, fingerprint), r -> !(r instanceof InProgress));
        Claimed takeover = expect(Claimed.class, result, "takeover of the probe key");
        complete(probe, takeover.token(), response("probe"));
    }

    static ConditionFactory waiting(String what) {
        return await(what).atMost(AWAIT).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(25));
    }

    static <T extends ClaimResult> T expect(Class<T> type, ClaimResult actual, String context) {
        if (!type.isInstance(actual)) {
            fail(context + ": expected " + type.getSimpleName() + ", but the store answered " + actual);
        }
        return type.cast(actual);
    }

    static void assertCommitted(FencedWrite write, String context) {
        if (!(write instanceof FencedWrite.Committed)) {
            fail(context + ": expected COMMITTED, but the store answered " + write);
        }
    }

    static void assertLeaseLost(FencedWrite write, String context) {
        if (!(write instanceof FencedWrite.LeaseLost)) {
            fail(context + ": expected LEASE_LOST (the token does not hold the key), but the store answered " + write);
        }
    }

    /** Compares status, header names, each header's values in order, and the body byte for byte. */
    protected static void assertSameResponse(StoredResponse actual, StoredResponse expected, String context) {
        assertThat(actual).as("%s: response", context).isNotNull();
        assertThat(actual.status()).as("%s: status", context).isEqualTo(expected.status());
        assertThat(actual.headers().keySet()).as("%s: header names", context)
                .containsExactlyInAnyOrderElementsOf(expected.headers().keySet());
        expected.headers().forEach((name, values) -> assertThat(actual.headers().get(name))
                .as("%s: values of header %s, in order", context, name).containsExactlyElementsOf(values));
        byte[] a = actual.body();
        byte[] e = expected.body();
        assertThat(a.length).as("%s: body length", context).isEqualTo(e.length);
        int mismatch = Arrays.mismatch(a, e);
        if (mismatch >= 0) {
            fail(context + ": body of " + e.length + " bytes differs first at index " + mismatch + " (expected "
                    + e[mismatch] + ", was " + a[mismatch] + ")");
        }
    }

    static StoredResponse response(String body) {
        return StoredResponse.of(200, Map.of("Content-Type", List.of("text/plain; charset=utf-8")), body.getBytes(UTF_8));
    }

    static StoredResponse keyEcho(String value) {
        return StoredResponse.of(200, Map.of(), value.getBytes(UTF_8));
    }

    static String quote(String value) {
        return "[" + value + "] (" + value.length() + " chars)";
    }
}
