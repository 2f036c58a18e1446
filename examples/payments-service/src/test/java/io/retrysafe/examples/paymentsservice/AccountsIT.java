package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.newAccount;
import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@code PATCH /accounts/{id}} with {@code If-Match}: the resource version is the update's key. */
class AccountsIT extends ServiceITSupport {

    private HttpResponse<String> patch(String account, String ifMatch, String body) throws Exception {
        HttpRequest.Builder b = request(ALICE, "/accounts/" + account)
                .header("Content-Type", "application/merge-patch+json")
                .method("PATCH", HttpRequest.BodyPublishers.ofString(body));
        return send(ifMatch == null ? b : b.header("If-Match", ifMatch));
    }

    private String etag(String account) throws Exception {
        return get(ALICE, "/accounts/" + account).headers().firstValue("ETag").orElseThrow();
    }

    @Test
    void getAnswersWithTheVersionAsETag() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> read = get(ALICE, "/accounts/" + account);

        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.headers().firstValue("ETag")).hasValue("\"v1\"");
        assertThat(read.body()).contains("\"balance\":10000", "\"version\":1");
    }

    @Test
    void patchWithTheCurrentETagUpdatesAndMovesTheVersion() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> updated = patch(account, etag(account), "{\"label\":\"Rent\"}");

        assertThat(updated.statusCode()).isEqualTo(200);
        assertThat(updated.headers().firstValue("ETag")).hasValue("\"v2\"");
        assertThat(updated.body()).contains("\"label\":\"Rent\"", "\"version\":2");
        assertThat(etag(account)).isEqualTo("\"v2\"");
    }

    @Test
    void aStaleIfMatchIs412AndChangesNothing() throws Exception {
        String account = newAccount(10_000);
        String read = etag(account);
        patch(account, read, "{\"label\":\"Rent\"}");

        // A retry, or another client, still holding the version it read.
        HttpResponse<String> stale = patch(account, read, "{\"label\":\"Holidays\"}");

        assertThat(stale.statusCode()).isEqualTo(412);
        assertThat(stale.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(stale.body()).contains("\"type\":\"/problems/stale-version\"", "\"status\":412");
        assertThat(get(ALICE, "/accounts/" + account).body()).contains("\"label\":\"Rent\"", "\"version\":2");
    }

    @Test
    void aPaymentMovesTheETag() throws Exception {
        String account = newAccount(10_000);
        String read = etag(account);
        send(postPayment(ALICE, UUID.randomUUID().toString(), payment(account, 100)));

        assertThat(etag(account)).isNotEqualTo(read);
        assertThat(patch(account, read, "{\"label\":\"Rent\"}").statusCode()).isEqualTo(412);
    }

    @Test
    void withoutIfMatchIs428() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> missing = patch(account, null, "{\"label\":\"Rent\"}");
        HttpResponse<String> any = patch(account, "*", "{\"label\":\"Rent\"}");

        for (HttpResponse<String> r : List.of(missing, any)) {
            assertThat(r.statusCode()).isEqualTo(428);
            assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
            assertThat(r.body()).contains("\"type\":\"/problems/version-required\"", "\"status\":428");
        }
        assertThat(etag(account)).isEqualTo("\"v1\"");
    }

    @Test
    void aWeakOrForeignETagNeverMatches() throws Exception {
        String account = newAccount(10_000);

        assertThat(patch(account, "W/\"v1\"", "{\"label\":\"Rent\"}").statusCode()).isEqualTo(412);
        assertThat(patch(account, "\"1\"", "{\"label\":\"Rent\"}").statusCode()).isEqualTo(412);
        assertThat(patch(account, "\"v7\", \"v1\"", "{\"label\":\"Rent\"}").statusCode()).isEqualTo(200);
    }

    @Test
    void onlyTheLabelCanBePatched() throws Exception {
        String account = newAccount(10_000);

        HttpResponse<String> balance = patch(account, "\"v1\"", "{\"balance\":1000000}");

        assertThat(balance.statusCode()).isEqualTo(400);
        assertThat(balance.body()).contains("\"type\":\"/problems/invalid-request\"");
        assertThat(get(ALICE, "/accounts/" + account).body()).contains("\"balance\":10000", "\"version\":1");
    }

    @Test
    void anUnknownAccountIs404() throws Exception {
        assertThat(get(ALICE, "/accounts/no-such-account").statusCode()).isEqualTo(404);
        assertThat(patch("no-such-account", "\"v1\"", "{\"label\":\"Rent\"}").statusCode()).isEqualTo(404);
    }

    @Test
    void ofConcurrentPatchesOnOneVersionExactlyOneWins() throws Exception {
        String account = newAccount(10_000);
        int n = 16;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        List<Integer> statuses = new ArrayList<>();
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<HttpResponse<String>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                String label = "label-" + i;
                futures.add(pool.submit(() -> {
                    start.await();
                    return patch(account, "\"v1\"", "{\"label\":\"" + label + "\"}");
                }));
            }
            start.countDown();
            for (Future<HttpResponse<String>> f : futures) {
                statuses.add(f.get(60, TimeUnit.SECONDS).statusCode());
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(statuses).containsOnly(200, 412);
        assertThat(statuses.stream().filter(s -> s == 200)).hasSize(1);
        assertThat(etag(account)).isEqualTo("\"v2\"");
    }
}
