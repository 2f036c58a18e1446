package io.retrysafe.examples.paymentsservice;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Health, metrics and the idempotency policy are open; RetrySafe's meters are on the Prometheus page. */
class ActuatorIT extends ServiceITSupport {

    @Test
    void healthNeedsNoCredentials() throws Exception {
        HttpResponse<String> health = get(null, "/actuator/health");

        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"");
    }

    @Test
    void prometheusShowsRetrySafeOutcomes() throws Exception {
        String account = PaymentsDatabase.newAccount(10_000);
        String key = UUID.randomUUID().toString();
        send(postPayment(ALICE, key, payment(account, 100)));
        send(postPayment(ALICE, key, payment(account, 100)));

        HttpResponse<String> metrics = get(null, "/actuator/prometheus");

        assertThat(metrics.statusCode()).isEqualTo(200);
        assertThat(metrics.body()).containsPattern(
                "retrysafe_requests_total\\{[^}]*outcome=\"executed\"[^}]*} [1-9]")
                .containsPattern("retrysafe_requests_total\\{[^}]*outcome=\"replayed\"[^}]*} [1-9]");
    }

    @Test
    void theIdempotencyPolicyTellsClientsHowLongAPaymentKeyProtectsThem() throws Exception {
        HttpResponse<String> policy = get(null, "/actuator/idempotency");

        assertThat(policy.statusCode()).isEqualTo(200);
        assertThat(policy.headers().firstValue("Content-Type")).hasValueSatisfying(
                t -> assertThat(t).startsWith("application/vnd.spring-boot.actuator.v3+json"));
        JsonNode json = JsonMapper.builder().build().readTree(policy.body());
        assertThat(json.get("mode").asString()).isEqualTo("transactional");
        assertThat(json.get("key").get("header").asString()).isEqualTo("Idempotency-Key");
        assertThat(json.get("key").get("maxLength").asInt()).isEqualTo(255);
        JsonNode routes = json.get("routes");
        assertThat(routes.size()).isEqualTo(1);
        JsonNode payments = routes.get(0);
        assertThat(payments.get("method").asString()).isEqualTo("POST");
        assertThat(payments.get("pattern").asString()).isEqualTo("/payments");
        assertThat(payments.get("keyRequired").asBoolean()).isTrue();
        assertThat(payments.get("retention").asString()).isEqualTo("PT24H");
        assertThat(payments.get("inFlight").get("duplicateWait").asString()).isEqualTo("PT5S");
        assertThat(payments.get("inFlight").get("retryAfter").asString()).isEqualTo("PT1S");
        assertThat(payments.get("inFlight").has("lease")).as("no lease in transactional mode").isFalse();
        assertThat(payments.get("fingerprint").get("members").toString()).isEqualTo("[\"/account\",\"/amount\"]");
        // Configuration only: no user, key, store or table.
        assertThat(policy.body()).doesNotContain("alice", "retrysafe_record", "jdbc", "postgres");
    }

    @Test
    void otherEndpointsNeedCredentials() throws Exception {
        assertThat(get(null, "/accounts/acc-1").statusCode()).isEqualTo(401);
        assertThat(get(null, "/actuator/env").statusCode()).isIn(401, 404);
    }
}
