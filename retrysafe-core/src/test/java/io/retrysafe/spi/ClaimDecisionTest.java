package io.retrysafe.spi;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Fingerprint;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The decision table every store answers by: one row per kind of record a claim can find. */
class ClaimDecisionTest {
    private static final Fingerprint REQUEST = Fingerprint.sha256("POST /payments {\"amount\":10}".getBytes(UTF_8));
    private static final Fingerprint OTHER = Fingerprint.sha256("POST /payments {\"amount\":11}".getBytes(UTF_8));
    private static final StoredResponse RESPONSE = StoredResponse.of(201, "created".getBytes(UTF_8));
    private static final Duration ALIVE = Duration.ofSeconds(30);
    private static final Duration RAN_OUT = Duration.ofMillis(-5);

    @Test
    void anotherRequestsLiveRecordIsAMismatchWhateverItsStatus() {
        for (RecordStatus status : RecordStatus.values()) {
            assertThat(decide(found(OTHER, status, false, ALIVE)))
                    .as(status.name()).isEqualTo(answer(new ClaimResult.FingerprintMismatch()));
        }
    }

    @Test
    void completedRecordIsReplayed() {
        assertThat(decide(found(REQUEST, RecordStatus.COMPLETED, false, RAN_OUT)))
                .isEqualTo(answer(new ClaimResult.Replay(RESPONSE)));
    }

    @Test
    void liveLeaseIsInProgressForWhatIsLeftOfIt() {
        assertThat(decide(found(REQUEST, RecordStatus.IN_PROGRESS, false, ALIVE)))
                .isEqualTo(answer(new ClaimResult.InProgress(ALIVE)));
    }

    @Test
    void leaseThatRanOutIsTakenOverAsTheNextAttempt() {
        assertThat(decide(found(REQUEST, RecordStatus.IN_PROGRESS, false, RAN_OUT)))
                .isEqualTo(new ClaimDecision.TakeOver(false));
        assertThat(decide(found(REQUEST, RecordStatus.IN_PROGRESS, false, Duration.ZERO)))
                .as("a lease ends at its expiry instant").isEqualTo(new ClaimDecision.TakeOver(false));
    }

    @Test
    void releasedRecordIsTakenOverAsTheNextAttempt() {
        assertThat(decide(found(REQUEST, RecordStatus.FAILED, false, ALIVE)))
                .isEqualTo(new ClaimDecision.TakeOver(false));
    }

    @Test
    void expiredRecordCountsAsAbsentWhateverItHolds() {
        for (RecordStatus status : RecordStatus.values()) {
            for (Fingerprint fingerprint : new Fingerprint[] {REQUEST, OTHER}) {
                assertThat(decide(found(fingerprint, status, true, ALIVE)))
                        .as(status.name()).isEqualTo(new ClaimDecision.TakeOver(true));
            }
        }
    }

    @Test
    void completedRecordWithoutAResponseIsRefused() {
        assertThatThrownBy(() -> new FoundRecord(REQUEST, RecordStatus.COMPLETED, false, ALIVE, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a COMPLETED record has a stored response, but it was null");
    }

    private static ClaimDecision decide(FoundRecord found) {
        return ClaimDecision.of(REQUEST, found);
    }

    private static FoundRecord found(Fingerprint fingerprint, RecordStatus status, boolean expired, Duration lease) {
        return new FoundRecord(fingerprint, status, expired, lease, status == RecordStatus.COMPLETED ? RESPONSE : null);
    }

    private static ClaimDecision answer(ClaimResult result) {
        return new ClaimDecision.Answer(result);
    }
}
