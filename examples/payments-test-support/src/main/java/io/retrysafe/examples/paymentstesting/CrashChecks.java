package io.retrysafe.examples.paymentstesting;

import static io.retrysafe.conformance.PaymentsClient.payment;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.conformance.CrashUnderLoad;
import io.retrysafe.conformance.CrashUnderLoad.Answer;
import io.retrysafe.conformance.PaymentsClient;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What a payments service killed under load ({@link CrashUnderLoad}, 100 cents per intent) must leave behind, in
 * {@link PaymentsDatabase}: each intent booked once, and every answer to it, a replay after the restart included,
 * byte for byte the first answer its client got.
 */
public final class CrashChecks {

    private CrashChecks() {
    }

    public static void assertEachIntentBookedOnce(CrashUnderLoad load, PaymentsTarget target) throws Exception {
        // What a client sees of the kill: requests in flight end with no HTTP answer at all.
        assertThat(load.cut()).as("requests in flight when the service died, left with no answer").isNotEmpty();
        PaymentsClient client = new PaymentsClient(target);
        for (Map.Entry<String, String> intent : load.accountOf().entrySet()) {
            String key = intent.getKey();
            String account = intent.getValue();
            HttpResponse<byte[]> replay = client.payUntilAnswered(target.firstUser(), key, payment(account, 100),
                    CrashUnderLoad.RETRIED, CrashUnderLoad.RETRY_BOUND, new ArrayList<>());
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).as("replay of %s", key).hasValue("true");
            List<Answer> answers = new ArrayList<>(load.answersOf(key));
            answers.add(Answer.of(replay));
            assertThat(answers).as("every answer of %s", key).containsOnly(answers.get(0));
            assertThat(answers.get(0).status()).as("%s", answers.get(0)).isEqualTo(201);
            assertThat(PaymentsDatabase.payments(account)).as("payments of %s", key).isEqualTo(1);
            assertThat(PaymentsDatabase.balance(account)).as("balance of %s", account).isEqualTo(9_900);
        }
        System.out.println("intents: " + load.accountOf().size() + "; requests cut by the kill: " + load.cut().size()
                + ", refused while it was down: " + load.refused());
    }
}
