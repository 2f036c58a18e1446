package io.retrysafe.examples.paymentsservice;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Health and metrics are open; RetrySafe's meters are on the Prometheus page. */
class ActuatorIT extends ServiceITSupport {

    @Test
    void healthNeedsNoCredentials() throws Exception {
        HttpResponse<String> health = get(null, "/actuator/health");

        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(health.body()).contains("\"status\":\"UP\"");
    }

    @Test
    void prometheusShowsRetrySafeOutcomes() throws Exception {
        String account = ServiceDatabase.newAccount(10_000);
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
    void otherEndpointsNeedCredentials() throws Exception {
        assertThat(get(null, "/accounts/acc-1").statusCode()).isEqualTo(401);
        assertThat(get(null, "/actuator/env").statusCode()).isIn(401, 404);
    }
}
