package io.retrysafe.spi;

import io.retrysafe.Fingerprint;
import java.time.Duration;

/**
 * What a claim decides from the record it found for its key, written once for every store. In order:
 * an expired record counts as absent and is taken over as a first attempt; a record made for another
 * request (fingerprint) is refused; a completed one is replayed; one whose holder's lease is alive is
 * in progress; anything else (released after a failure, or its holder's lease ran out) is taken over
 * as the next attempt.
 *
 * <p>A store decides and writes in one atomic step, so where the takeover must happen inside the
 * database's own statement (an {@code INSERT … ON CONFLICT … WHERE}, a function) that statement carries
 * the takeover condition in SQL too. The store then calls this with the record the statement left or
 * returned, and this is the one place that turns it into an answer.
 */
public sealed interface ClaimDecision {

    /**
     * The request is answered without running: {@link ClaimResult.FingerprintMismatch},
     * {@link ClaimResult.Replay} or {@link ClaimResult.InProgress}.
     */
    record Answer(ClaimResult result) implements ClaimDecision {
    }

    /**
     * The claim takes the record over with its own token. {@code fresh}: the record had expired, so the
     * new attempt is the first and the record counts as created now; otherwise it is the next attempt.
     */
    record TakeOver(boolean fresh) implements ClaimDecision {
    }

    /** The decision for a claim with {@code requested}'s fingerprint that found {@code found}. */
    static ClaimDecision of(Fingerprint requested, FoundRecord found) {
        if (found.expired()) {
            return new TakeOver(true);
        }
        if (!found.fingerprint().matches(requested)) {
            return new Answer(new ClaimResult.FingerprintMismatch());
        }
        if (found.status() == RecordStatus.COMPLETED) {
            return new Answer(new ClaimResult.Replay(found.response()));
        }
        if (found.status() == RecordStatus.IN_PROGRESS && found.leaseRemaining().compareTo(Duration.ZERO) > 0) {
            return new Answer(new ClaimResult.InProgress(found.leaseRemaining()));
        }
        return new TakeOver(false);
    }
}
