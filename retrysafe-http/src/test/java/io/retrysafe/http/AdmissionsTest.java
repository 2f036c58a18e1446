package io.retrysafe.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Attempt;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.spi.RetrySafeListener;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a request to a phased operation is, whichever front door read it, and what its outcome answers. */
class AdmissionsTest {
    private static final HttpRoute ROUTE = HttpRoute.of("POST", "/orders").keyRequired(true).jsonMembers("/item")
            .build();
    private static final byte[] BODY = "{\"item\":\"book\",\"note\":\"x\"}".getBytes(UTF_8);

    private final List<InvalidKeyException> refusedKeys = new ArrayList<>();
    private final Admissions admissions = Admissions.of(ROUTE, KeyRules.DEFAULT, new RetrySafeListener() {
        @Override
        public void onInvalidKey(InvalidKeyException e) {
            refusedKeys.add(e);
        }
    });

    private Admission admit(List<String> key, String caller, String path, byte[] body) {
        return admissions.admit(key, caller, "POST", path, null, name -> List.of(), "application/json", body);
    }

    @Test
    void theSameRequestSpelledOtherwiseIsAdmittedWithTheSameKeyAndFingerprint() {
        Admission plain = admit(List.of("k-1"), "principal:alice", "/orders", BODY);
        Admission spelled = admit(List.of("k-1"), "principal:alice", "/./orders", "{\"note\":\"y\", \"item\": \"book\"}"
                .getBytes(UTF_8));

        assertThat(plain).isInstanceOf(Admission.Admitted.class).isEqualTo(spelled);
        assertThat(((Admission.Admitted) plain).key()).isEqualTo(KeyRules.DEFAULT.key(
                HttpSemantics.scope("principal:alice", ROUTE), "k-1"));
    }

    @Test
    void refusalsComeInTheFiltersOrderKeyThenCallerThenBody() {
        Admission noKeyNoCaller = admit(List.of(), null, "/orders", "{".getBytes(UTF_8));
        Admission noCaller = admit(List.of("k-1"), null, "/orders", "{".getBytes(UTF_8));
        Admission unscopable = admit(List.of("k-1"), "x".repeat(10_000), "/orders", BODY);
        Admission notJson = admit(List.of("k-1"), "principal:alice", "/orders", "{".getBytes(UTF_8));

        assertThat(answer(noKeyNoCaller).status()).isEqualTo(400);
        assertThat(new String(answer(noKeyNoCaller).body(), UTF_8)).contains("\"rule\":\"missing\"");
        assertThat(refusedKeys).as("the keys the listener heard refused").hasSize(1);
        assertThat(answer(noCaller).status()).isEqualTo(401);
        assertThat(answer(unscopable).status()).isEqualTo(401);
        assertThat(new String(answer(unscopable).body(), UTF_8)).contains("cannot scope a key");
        assertThat(answer(notJson).status()).isEqualTo(400);
        assertThat(new String(answer(notJson).body(), UTF_8)).contains("the body is not JSON");
    }

    @Test
    void anOutcomeAnswersWithTheStoredAnswerItsReplayOrItsRefusal() {
        ResponseCodec<String> codec = ResponseCodec.utf8();

        HttpAnswer executed = HttpSemantics.answer(new Outcome.Executed<>("done",
                new Attempt(IdempotencyKey.of("s", "k-1"), 1), Outcome.Completion.STORED), codec);
        HttpAnswer replayed = HttpSemantics.answer(new Outcome.Replayed<>("done"), codec);
        HttpAnswer reused = HttpSemantics.answer(new Outcome.FingerprintMismatch<>(), codec);

        assertThat(executed.status()).isEqualTo(200);
        assertThat(executed.headers()).doesNotContainKey(HttpSemantics.REPLAYED_HEADER);
        assertThat(new String(executed.body(), UTF_8)).isEqualTo("done");
        assertThat(replayed.headers()).containsEntry(HttpSemantics.REPLAYED_HEADER, List.of("true"));
        assertThat(replayed.body()).isEqualTo(executed.body());
        assertThat(reused.status()).isEqualTo(422);
        assertThat(reused.headers()).containsEntry("Content-Type", List.of("application/problem+json"));
    }

    private static HttpAnswer answer(Admission admission) {
        assertThat(admission).isInstanceOf(Admission.Refused.class);
        return ((Admission.Refused) admission).answer();
    }
}
