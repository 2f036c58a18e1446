package io.retrysafe.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.OwnerToken;
import org.junit.jupiter.api.Test;

/**
 * The contract for a store whose claim lives inside the application's transaction until it commits
 * (a JDBC store in transactional mode, seen through an adapter that opens one transaction per
 * claim): everything in {@link IdempotencyStoreContract}, plus a holder that dies by rolling back.
 * Such a claim is invisible outside its transaction, so leases do not expire while it is open, and
 * a release rolls the claim back instead of leaving a {@code FAILED} record.
 */
public abstract non-sealed class TransactionalStoreContract extends IdempotencyStoreContract {

    @Override
    final boolean leasesExpire() {
        return false;
    }

    @Override
    final boolean releaseKeepsRecord() {
        return false;
    }

    /** Makes the holder of {@code token} disappear as a crash would: its transaction rolls back. */
    protected abstract void abandon(OwnerToken token);

    @Test
    void abandonedClaimIsClaimedAgainAndTheOldHolderIsFencedOff() {
        IdempotencyKey key = newKey();
        Claimed old = claimFirst(key, LONG_LEASE, LONG_RETENTION);

        abandon(old.token());

        ClaimRequest retryRequest = request(key, fingerprint, LONG_LEASE, LONG_RETENTION);
        Claimed retry = expect(Claimed.class, store().tryClaim(retryRequest), "claim after the holder was abandoned");
        assertThat(retry.token()).as("token of the claim after abandon").isEqualTo(retryRequest.token());
        assertThat(retry.attempt()).as("attempt after the abandoned claim was rolled back").isEqualTo(1);
        assertLeaseLost(store().complete(key, old.token(), response("old"), LONG_RETENTION),
                "complete by the abandoned holder");
        assertCommitted(store().complete(key, retry.token(), response("new"), LONG_RETENTION),
                "complete by the new holder");
        assertReplays(key, response("new"), "after abandon and retry");
    }
}
