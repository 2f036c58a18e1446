package io.retrysafe.conformance;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * What must survive a restart of the service: the key and its answer are durable, not held in a
 * process's memory. For targets the test runs as processes of its own ({@link RestartableTarget}).
 */
public abstract class RestartConformance {

    protected abstract RestartableTarget target();

    @Test
    void aRetryAfterARestartIsReplayedAndHasNoSecondEffect() throws Exception {
        String account = target().newAccount(10_000);
        String key = UUID.randomUUID().toString();
        PaymentsClient before = new PaymentsClient(target());
        HttpResponse<String> first = before.send(before.postPayment(target().firstUser(), key, payment(account, 100)));
        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);

        target().restart();

        PaymentsClient after = new PaymentsClient(target()); // the base URI may have changed
        HttpResponse<String> retry = after.send(after.postPayment(target().firstUser(), key, payment(account, 100)));
        assertThat(retry.statusCode()).as(retry.body()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(target().effects(account)).isEqualTo(1);
    }
}
