package io.retrysafe.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Fingerprint;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HttpSemanticsTest {

    @Test
    void retryAfterIsWholeSecondsRoundedUpAndAtLeastOne() {
        assertThat(ProblemType.retryAfterSeconds(Duration.ofMillis(1))).isEqualTo("1");
        assertThat(ProblemType.retryAfterSeconds(Duration.ofMillis(1001))).isEqualTo("2");
        assertThat(ProblemType.retryAfterSeconds(Duration.ZERO)).isEqualTo("1");
        assertThat(ProblemType.retryAfterSeconds(Duration.ofSeconds(7))).isEqualTo("7");
    }

    @Test
    void aRefusalBeforeTheBodyClosesTheConnectionOnlyWhenABodyIsDeclared() {
        HttpAnswer tooLarge = HttpSemantics.tooLarge(10, 100);

        HttpAnswer withLength = HttpSemantics.unreadBody(tooLarge, 100, null);
        HttpAnswer chunked = HttpSemantics.unreadBody(tooLarge, -1, "chunked");
        HttpAnswer noBody = HttpSemantics.unreadBody(tooLarge, -1, null);
        HttpAnswer emptyBody = HttpSemantics.unreadBody(tooLarge, 0, null);

        assertThat(withLength.headers()).containsEntry("Connection", List.of("close"))
                .containsAllEntriesOf(tooLarge.headers());
        assertThat(withLength.status()).isEqualTo(413);
        assertThat(withLength.body()).isEqualTo(tooLarge.body());
        assertThat(chunked.headers()).containsEntry("Connection", List.of("close"));
        assertThat(noBody.headers()).isEqualTo(tooLarge.headers());
        assertThat(emptyBody.headers()).isEqualTo(tooLarge.headers());
    }

    @Test
    void aProblemIsAnRfc9457DocumentWithItsEscapedDetail() {
        HttpAnswer answer = ProblemType.IN_PROGRESS.answer("say \"later\"\n", null, Duration.ofMillis(1500));

        assertThat(answer.status()).isEqualTo(409);
        assertThat(answer.headers()).containsEntry("Content-Type", List.of("application/problem+json"))
                .containsEntry("Retry-After", List.of("2"));
        assertThat(new String(answer.body(), UTF_8)).isEqualTo("{\"type\":\"/problems/request-in-progress\","
                + "\"title\":\"A request with this key is in progress\",\"status\":409,"
                + "\"detail\":\"say \\\"later\\\"\\n\"}");
    }

    @Test
    void aMissingKeyAndABrokenRuleAreTwoProblemsNamingTheRule() {
        InvalidKeyException missing = assertThrows(() -> KeyRules.DEFAULT.parseHeader(List.of()));
        InvalidKeyException tooLong = assertThrows(() -> KeyRules.DEFAULT.parseHeader(List.of("k".repeat(300))));

        assertThat(new String(HttpSemantics.keyRefused(missing).body(), UTF_8))
                .contains("/problems/missing-key").contains("\"rule\":\"missing\"");
        assertThat(HttpSemantics.keyRefused(tooLong).status()).isEqualTo(400);
        assertThat(new String(HttpSemantics.keyRefused(tooLong).body(), UTF_8)).contains("/problems/invalid-key");
    }

    @Test
    void aReplayIsTheStoredResponseMarkedReplayed() {
        StoredResponse stored = StoredResponse.of(201, Map.of("Location", List.of("/payments/1")), "ok".getBytes(UTF_8));

        HttpAnswer replay = HttpSemantics.refusal(new Outcome.Replayed<>(stored));

        assertThat(replay.status()).isEqualTo(201);
        assertThat(replay.headers()).containsEntry("Location", List.of("/payments/1"))
                .containsEntry("Idempotent-Replayed", List.of("true"));
        assertThat(replay.body()).isEqualTo("ok".getBytes(UTF_8));
    }

    @Test
    void anExecutedOutcomeIsNoRefusalAndTheHandlersOwnFailureIsNoProblem() {
        assertThat(HttpSemantics.refusal(new Outcome.Unprotected<>(StoredResponse.of(200, new byte[0]),
                new IllegalStateException("down")))).isNull();
        assertThat(HttpSemantics.failure(new IllegalArgumentException("the handler's"))).isNull();
        assertThat(HttpSemantics.failure(new OutcomeUnknownException("memory", null, "lost", null)).headers())
                .containsEntry("Retry-After", List.of("1"));
    }

    @Test
    void credentialsAreNeverStoredNorAllowedInTheList() {
        assertThat(HttpSemantics.isStored("Location", HttpSemantics.DEFAULT_REPLAYED_HEADERS)).isTrue();
        assertThat(HttpSemantics.isStored("Set-Cookie", Set.of("set-cookie"))).isFalse();
        assertThatThrownBy(() -> HttpSemantics.replayedHeaders(Set.of("Location", "Authorization")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Authorization");
    }

    @Test
    void routesMatchTheNormalisedPath() {
        HttpRoute route = HttpRoute.of("post", "/payments/{id}/refunds").build();

        assertThat(route.matches("POST", HttpPaths.normalise("/payments/7/./refunds"))).isTrue();
        assertThat(route.matches("POST", HttpPaths.normalise("/p%61yments/7/refunds;x"))).isTrue();
        assertThat(route.matches("PUT", "/payments/7/refunds")).isFalse();
        assertThat(HttpSemantics.scope("principal:alice", route)).isEqualTo("principal:alice|POST /payments/{id}/refunds");
    }

    @Test
    void aRouteFingerprintsItsJsonMembersCanonicallyAndRefusesARepeatedOneWhenBuilt() {
        HttpRoute route = HttpRoute.of("POST", "/payments").jsonMembers("/amount").build();

        assertThat(fingerprint(route, "{\"amount\":100,\"note\":\"a\"}"))
                .isEqualTo(fingerprint(route, "{ \"note\": \"b\", \"amount\": 1e2 }"))
                .isNotEqualTo(fingerprint(route, "{\"amount\":101}"));
        assertThatThrownBy(() -> HttpRoute.of("POST", "/payments").jsonMembers("/amount", "/amount").build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice");
    }

    private static Fingerprint fingerprint(HttpRoute route, String json) {
        return HttpSemantics.fingerprint(route, "POST", "/payments", null, name -> List.of(), "application/json",
                json.getBytes(UTF_8));
    }

    private static InvalidKeyException assertThrows(Runnable call) {
        try {
            call.run();
        } catch (InvalidKeyException e) {
            return e;
        }
        throw new AssertionError("no InvalidKeyException");
    }
}
