package io.retrysafe.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.FingerprintMismatch;
import io.retrysafe.spi.ClaimResult.InProgress;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The contract for a store whose claims are committed when made (Redis, a JDBC store used
 * directly, the in-memory store): everything in {@link IdempotencyStoreContract}, plus leases that
 * expire while their holder lives, takeovers, and released records that stay as {@code FAILED}.
 */
public abstract non-sealed class StandaloneStoreContract extends IdempotencyStoreContract {

    @Override
    final boolean leasesExpire() {
        return true;
    }

    @Override
    final boolean releaseKeepsRecord() {
        return true;
    }

    @Test
    void fingerprintMismatchAgainstFailedRecordChangesNothing() {
        IdempotencyKey key = newKey();
        Claimed holder = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        assertCommitted(store().release(key, holder.token()), "release by the holder");

        expect(FingerprintMismatch.class, claim(key, otherFingerprint), "claim of a released key with another fingerprint");

        IdempotencyRecord after = inspectPresent(key, "released record after a mismatching claim");
        assertThat(after.status()).as("status after a mismatching claim").isEqualTo(RecordStatus.FAILED);
        assertThat(after.fingerprint()).as("fingerprint after a mismatching claim").isEqualTo(fingerprint);
        assertThat(after.attempt()).as("attempt after a mismatching claim").isEqualTo(1);
        Claimed retry = expect(Claimed.class, claim(key, fingerprint), "claim with the right fingerprint after a mismatch");
        assertThat(retry.attempt()).as("attempt of the retry after a mismatching claim").isEqualTo(2);
        complete(key, retry.token(), response("retried"));
    }

    @Test
    void expiredLeaseIsTakenOverAndTheOldHolderIsFencedOff() {
        IdempotencyKey key = newKey();
        Claimed old = claimFirst(key, SHORT, LONG_RETENTION); // its holder then goes silent

        AtomicReference<ClaimRequest> last = new AtomicReference<>();
        ClaimResult result = waiting("a claim to take over key " + key.value() + " after its lease of " + SHORT)
                .until(() -> {
                    ClaimRequest r = request(key, fingerprint, LONG_LEASE, LONG_RETENTION);
                    last.set(r);
                    return store().tryClaim(r);
                }, r -> !(r instanceof InProgress));

        Claimed takeover = expect(Claimed.class, result, "claim after the holder's lease expired");
        assertThat(takeover.attempt()).as("attempt of the takeover").isEqualTo(2);
        assertThat(takeover.token()).as("token of the takeover").isEqualTo(last.get().token()).isNotEqualTo(old.token());
        assertLeaseLost(store().complete(key, old.token(), response("old"), LONG_RETENTION),
                "complete by the holder whose lease was taken over");
        assertLeaseLost(store().release(key, old.token()), "release by the holder whose lease was taken over");
        assertThat(inspectPresent(key, "record after takeover").attempt()).as("attempt recorded after takeover")
                .isEqualTo(2);
        assertCommitted(store().complete(key, takeover.token(), response("new"), LONG_RETENTION),
                "complete by the attempt that took over");
        assertReplays(key, response("new"), "after takeover");
    }

    @Test
    void lateCompletionWithoutTakeoverIsStored() {
        IdempotencyKey key = newKey();
        Claimed late = claimFirst(key, SHORT, LONG_RETENTION);
        awaitLeaseExpiredAfter(SHORT);

        assertCommitted(store().complete(key, late.token(), response("late"), LONG_RETENTION),
                "complete by a holder whose lease expired but whom nobody took over");

        assertReplays(key, response("late"), "after a late completion");
    }

    @Test
    void completionAfterTheRecordExpiredIsLeaseLost() {
        IdempotencyKey key = newKey();
        Claimed holder = claimFirst(key, SHORT, SHORT);
        awaitAbsent(key);

        assertLeaseLost(store().complete(key, holder.token(), response("too late"), LONG_RETENTION),
                "complete after the record's retention ran out");

        assertThat(store().inspect(key)).as("inspect of an expired key after a refused completion").isEmpty();
        Claimed fresh = expect(Claimed.class, claim(key, fingerprint), "claim of an expired in-progress key");
        assertThat(fresh.attempt()).as("attempt of a claim of an expired key").isEqualTo(1);
        complete(key, fresh.token(), response("fresh"));
    }

    @Test
    void aRenewedLeaseOutlivesItsFirstTtlAndKeepsDuplicatesOut() {
        assertThat(store().canRenewLease()).as("a standalone store renews leases").isTrue();
        assertThat(store().isStandalone()).as("a standalone store's writes commit on their own").isTrue();
        IdempotencyKey key = newKey();
        Claimed holder = claimFirst(key, SHORT, LONG_RETENTION);

        assertCommitted(store().renewLease(key, holder.token(), LONG_LEASE), "renewal by the holder");
        awaitLeaseExpiredAfter(SHORT);

        expect(InProgress.class, claim(key, fingerprint), "claim after the first lease ran out, but not the renewed one");
        IdempotencyRecord record = inspectPresent(key, "renewed record");
        assertThat(record.status()).as("status of a renewed record").isEqualTo(RecordStatus.IN_PROGRESS);
        assertThat(record.attempt()).as("attempt of a renewed record").isEqualTo(1);
        assertThat(Duration.between(record.createdAt(), record.leaseExpiresAt()))
                .as("lease of a record renewed for %s", LONG_LEASE).isGreaterThan(LONG_LEASE.minus(TIMESTAMP_TOLERANCE));
        complete(key, holder.token(), response("renewed"));
    }

    @Test
    void onlyTheHolderRenewsAndNothingElseChanges() {
        IdempotencyKey key = newKey();
        Claimed old = claimFirst(key, SHORT, LONG_RETENTION);
        AtomicReference<ClaimResult> takeover = new AtomicReference<>();
        waiting("a takeover of key " + key.value()).until(() -> {
            takeover.set(claim(key, fingerprint));
            return takeover.get();
        }, r -> !(r instanceof InProgress));
        Claimed current = expect(Claimed.class, takeover.get(), "claim after the holder's lease expired");

        assertLeaseLost(store().renewLease(key, old.token(), LONG_LEASE), "renewal by a holder that was taken over");
        assertLeaseLost(store().renewLease(key, OwnerToken.random(), LONG_LEASE), "renewal with a stranger's token");
        assertLeaseLost(store().renewLease(newKey(), current.token(), LONG_LEASE), "renewal of a key never claimed");
        assertThat(inspectPresent(key, "record after refused renewals").attempt()).isEqualTo(2);

        assertCommitted(store().complete(key, current.token(), response("done"), LONG_RETENTION), "complete");
        assertLeaseLost(store().renewLease(key, current.token(), LONG_LEASE), "renewal of a completed key");
        assertReplays(key, response("done"), "after a refused renewal of a completed key");

        IdempotencyKey released = newKey();
        Claimed r = claimFirst(released, LONG_LEASE, LONG_RETENTION);
        assertCommitted(store().release(released, r.token()), "release");
        assertLeaseLost(store().renewLease(released, r.token(), LONG_LEASE), "renewal of a released key");
        assertThat(inspectPresent(released, "released record after a refused renewal").status())
                .isEqualTo(RecordStatus.FAILED);
    }

    @Test
    void inspectReportsInProgressRecord() {
        IdempotencyKey key = newKey();
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        IdempotencyRecord record = inspectPresent(key, "held record");

        assertThat(record.key()).as("key").isEqualTo(key);
        assertThat(record.status()).as("status").isEqualTo(RecordStatus.IN_PROGRESS);
        assertThat(record.attempt()).as("attempt").isEqualTo(1);
        assertThat(record.fingerprint()).as("fingerprint").isEqualTo(fingerprint);
        assertThat(record.completedAt()).as("completedAt of a record not completed").isNull();
        assertThat(record.response()).as("response of a record not completed").isEmpty();
        assertThat(record.leaseExpiresAt()).as("leaseExpiresAt").isNotNull().isAfterOrEqualTo(record.createdAt());
        assertThat(Duration.between(record.createdAt(), record.leaseExpiresAt()))
                .as("leaseExpiresAt - createdAt of a claim with lease %s", LONG_LEASE)
                .isBetween(LONG_LEASE.minus(TIMESTAMP_TOLERANCE), LONG_LEASE.plus(TIMESTAMP_TOLERANCE));
        assertThat(Duration.between(record.createdAt(), record.expiresAt()))
                .as("expiresAt - createdAt of a claim with retention %s", LONG_RETENTION)
                .isBetween(LONG_RETENTION.minus(TIMESTAMP_TOLERANCE), LONG_RETENTION.plus(TIMESTAMP_TOLERANCE));
        complete(key, claimed.token(), response("done"));
    }

    @Test
    void inspectReportsFailedRecord() {
        IdempotencyKey key = newKey();
        Claimed claimed = claimFirst(key, LONG_LEASE, LONG_RETENTION);
        assertCommitted(store().release(key, claimed.token()), "release by the holder");

        IdempotencyRecord record = inspectPresent(key, "released record");

        assertThat(record.status()).as("status").isEqualTo(RecordStatus.FAILED);
        assertThat(record.attempt()).as("attempt").isEqualTo(1);
        assertThat(record.fingerprint()).as("fingerprint").isEqualTo(fingerprint);
        assertThat(record.completedAt()).as("completedAt of a record not completed").isNull();
        assertThat(record.response()).as("response of a record not completed").isEmpty();
        assertThat(record.expiresAt()).as("expiresAt").isAfterOrEqualTo(record.createdAt());
    }
}
