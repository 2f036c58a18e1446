package io.retrysafe.examples.gateway;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.CrashUnderLoad;
import io.retrysafe.conformance.CrashUnderLoad.Answer;
import io.retrysafe.conformance.Hold;
import io.retrysafe.conformance.PaymentsClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Processes killed with SIGKILL, as an operator's machine loses them: the upstream while it serves a
 * request, the gateway while clients pay through it. Clients retry with the same key until they get a
 * final answer. Afterwards no intent is booked twice, and every answer an intent got is the same.
 */
class GatewayCrashIT {
    @TempDir
    Path dir;

    @Test
    void theUpstreamKilledWhileServingARequestRunsItOnceAfterItsRestart() throws Exception {
        try (Upstream upstream = Upstream.start(dir); Gateway gateway = Gateway.start(dir, upstream, Gateway.Store.POSTGRESQL)) {
            GatewayTarget target = new GatewayTarget(gateway, upstream);
            PaymentsClient client = new PaymentsClient(target);
            String account = upstream.database().newAccount(10_000);
            String key = UUID.randomUUID().toString();

            Hold hold = upstream.hold(key);
            CompletableFuture<HttpResponse<String>> first = client.sendAsync(
                    hold.mark(client.postPayment(GatewayTarget.ALICE, key, payment(account, 100))));
            hold.awaitArrived();
            upstream.kill();

            // The gateway lost the upstream after it sent the request: it cannot know whether the payment
            // was made, so it says so, and keeps the key in progress until the lease ends.
            HttpResponse<String> lost = first.get(60, TimeUnit.SECONDS);
            assertThat(lost.statusCode()).as(lost.body()).isEqualTo(503);
            assertThat(lost.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(lost.body()).contains("\"type\":\"/problems/outcome-unknown\"");
            assertThat(lost.headers().firstValue("Retry-After")).isPresent();
            assertThat(upstream.database().executions(account)).isZero();

            upstream.restart();
            HttpResponse<byte[]> answered = client.payUntilAnswered(GatewayTarget.ALICE, key, payment(account, 100),
                    CrashUnderLoad.RETRIED, CrashUnderLoad.RETRY_BOUND, new ArrayList<>());
            assertThat(answered.statusCode()).as(Answer.of(answered).body()).isEqualTo(201);
            assertThat(answered.headers().firstValue("Idempotent-Replayed")).isEmpty();
            HttpResponse<byte[]> replay = client.payUntilAnswered(GatewayTarget.ALICE, key, payment(account, 100),
                    CrashUnderLoad.RETRIED, CrashUnderLoad.RETRY_BOUND, new ArrayList<>());
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(Answer.of(replay)).isEqualTo(Answer.of(answered));
            assertThat(upstream.database().executions(account)).isEqualTo(1);
            assertThat(upstream.database().payments(account)).isEqualTo(1);
        }
    }

    /** On PostgreSQL a protected request takes a request thread; on Redis the non-blocking path. */
    @ParameterizedTest
    @EnumSource(value = Gateway.Store.class, names = {"POSTGRESQL", "REDIS"})
    void theGatewayKilledUnderLoadBooksNoIntentTwiceAndEveryAnswerOfAnIntentIsTheSame(Gateway.Store store)
            throws Exception {
        try (Upstream upstream = Upstream.start(dir); Gateway gateway = Gateway.start(dir, upstream, store)) {
            GatewayTarget target = new GatewayTarget(gateway, upstream);
            PaymentsClient client = new PaymentsClient(target);
            CrashUnderLoad load = CrashUnderLoad.run(target, GatewayTarget.ALICE, 8, 12, () -> {
                gateway.kill();
                gateway.restart();
            });

            // What a client sees of the kill: requests in flight end with no HTTP answer at all (the
            // connection closes), and new ones are refused until the gateway is back.
            assertThat(load.cut()).as("requests in flight when the gateway died, left with no answer").isNotEmpty();
            int takenOver = 0;
            for (Map.Entry<String, String> intent : load.accountOf().entrySet()) {
                String key = intent.getKey();
                String account = intent.getValue();
                HttpResponse<byte[]> replay = client.payUntilAnswered(GatewayTarget.ALICE, key, payment(account, 100),
                        CrashUnderLoad.RETRIED, CrashUnderLoad.RETRY_BOUND, new ArrayList<>());
                List<Answer> answers = new ArrayList<>(load.answersOf(key));
                answers.add(Answer.of(replay));
                assertThat(answers).as("every answer of %s", key).containsOnly(answers.get(0));
                assertThat(answers.get(0).status()).as("%s", answers.get(0)).isEqualTo(201);
                assertThat(upstream.database().payments(account)).as("payments of %s", key).isEqualTo(1);
                if (upstream.database().executions(account) > 1) {
                    takenOver++;
                }
            }
            // What the guard in the upstream caught: intents forwarded before the kill whose answer the
            // gateway never stored, run again after their lease, answered with the payment already booked.
            System.out.println("intents executed twice by the upstream, booked once: " + takenOver + " of "
                    + load.accountOf().size() + "; requests cut by the kill: " + load.cut().size()
                    + ", refused while it was down: " + load.refused());
        }
    }
}
