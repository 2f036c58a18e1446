package io.retrysafe.examples.gateway;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.Credentials;
import io.retrysafe.conformance.HttpConformance;
import io.retrysafe.conformance.PaymentsClient;
import io.retrysafe.conformance.RestartConformance;
import io.retrysafe.conformance.RestartableTarget;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The example as a user runs it: the Python upstream and the gateway, each a process of its own, the
 * gateway on {@code gateway.yaml} and {@code users.txt}, its keys in the store a subclass names. The shared
 * conformance suite, where an effect is a call of the upstream's {@code POST /payments}
 * ({@link GatewayTarget#effects}): 64 concurrent requests with one key call it once. Then a restart of both
 * processes, and what only this example has. One upstream and one gateway per class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class GatewayConformance extends HttpConformance {
    private Upstream upstream;
    private Gateway gateway;

    /** Where the gateway keeps its keys. */
    abstract Gateway.Store store();

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        upstream = Upstream.start(dir);
        gateway = Gateway.start(dir, upstream, store());
    }

    @AfterAll
    void stop() throws Exception {
        try (Upstream u = upstream; Gateway g = gateway) {
            // both stopped, the gateway first
        }
    }

    @Override
    protected ConformanceTarget target() {
        return new GatewayTarget(gateway, upstream);
    }

    /** The key and its answer live in the gateway's store: both processes restarted, a retry is still a replay. */
    @Nested
    class Restart extends RestartConformance {
        @Override
        protected RestartableTarget target() {
            return new GatewayTarget(gateway, upstream);
        }
    }

    @Test
    void aWrongPasswordIs401AndReachesNothing() throws Exception {
        String account = upstream.database().newAccount(10_000);
        PaymentsClient client = client();

        HttpResponse<String> refused = client.send(client.postPayment(null, UUID.randomUUID().toString(),
                payment(account, 100)).header("Authorization", Credentials.basicAuthorization("alice", "wrong")));

        assertThat(refused.statusCode()).isEqualTo(401);
        assertThat(refused.body()).contains("\"type\":\"/problems/unauthenticated\"");
        assertThat(upstream.database().executions(account)).isZero();
    }
}
