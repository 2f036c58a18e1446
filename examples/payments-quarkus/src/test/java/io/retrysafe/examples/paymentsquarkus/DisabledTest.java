package io.retrysafe.examples.paymentsquarkus;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.retrysafe.conformance.PaymentsClient;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** {@code retrysafe.enabled=false}: the filters let every request through, the route's required key included. */
@QuarkusTest
@TestProfile(DisabledTest.Disabled.class)
@WithTestResource(PaymentsDatabaseResource.class)
class DisabledTest {
    private final QuarkusTarget target = new QuarkusTarget();
    private final PaymentsClient client = new PaymentsClient(target);

    /** Off, in the default (transactional) mode: the resource then writes in transactions of its own. */
    public static class Disabled implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("retrysafe.enabled", "false");
        }
    }

    @Test
    void aPaymentWithoutAKeyRunsAndARetryRunsAgain() throws Exception {
        String account = target.newAccount(10_000);
        String key = UUID.randomUUID().toString();

        HttpResponse<String> keyless = client.send(client.postPayment(target.firstUser(), null, payment(account, 100)));
        HttpResponse<String> first = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));
        HttpResponse<String> retry = client.send(client.postPayment(target.firstUser(), key, payment(account, 100)));

        assertThat(keyless.statusCode()).as(keyless.body()).isEqualTo(201);
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(target.effects(account)).isEqualTo(3);
    }
}
