package io.retrysafe.examples.paymentsservice.provider;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The payment provider as an operator or a test sees it, over its HTTP API: its charges (the ground truth of what
 * was charged, whatever the service says) and its faults ({@code /admin/faults}). Not what the checkout calls
 * (that is the service's own client); what the example's tests and the fault suite read the provider with.
 */
public final class ProviderAdmin {
    private final String url;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    /** @param url the provider's base URL, e.g. {@code http://127.0.0.1:35089} */
    public ProviderAdmin(String url) {
        this.url = url;
    }

    public String url() {
        return url;
    }

    /** A charge as the provider lists it. */
    public record Charge(String id, String key, String card, long amount, boolean refunded) {
    }

    /** Every charge the provider made, in the order it made them. */
    public List<Charge> charges() throws IOException, InterruptedException {
        String body = send(HttpRequest.newBuilder(URI.create(url + "/charges")).GET(), 200);
        List<Charge> charges = new ArrayList<>();
        if (body.length() > 2) {
            for (String one : body.substring(2, body.length() - 2).split("\\},\\{")) {
                charges.add(new Charge(FlatJson.member(one, "id"), FlatJson.member(one, "key"),
                        FlatJson.member(one, "card"), Long.parseLong(FlatJson.member(one, "amount")),
                        one.contains("\"refunded\":true")));
            }
        }
        return charges;
    }

    /** The charges of {@code card}. */
    public List<Charge> chargesOf(String card) throws IOException, InterruptedException {
        return charges().stream().filter(c -> c.card().equals(card)).toList();
    }

    /** The next {@code count} charges of {@code card} (any card when null) meet {@code mode}: fail, hang or slow. */
    public void fault(String mode, int count, long seconds, String card) throws IOException, InterruptedException {
        send(HttpRequest.newBuilder(URI.create(url + "/admin/faults")).POST(HttpRequest.BodyPublishers.ofString(
                "{\"mode\":\"" + mode + "\",\"count\":" + count + ",\"seconds\":" + seconds
                        + (card == null ? "" : ",\"card\":\"" + card + "\"") + "}")), 204);
    }

    /** No more faults: those not met yet are dropped. */
    public void clearFaults() throws IOException, InterruptedException {
        send(HttpRequest.newBuilder(URI.create(url + "/admin/faults")).DELETE(), 204);
    }

    /** How many charge requests of {@code card} the provider holds open or delays now. */
    public int held(String card) throws IOException, InterruptedException {
        return Integer.parseInt(FlatJson.member(send(HttpRequest.newBuilder(URI.create(url + "/admin/requests?card="
                + card)).GET(), 200), "held"));
    }

    private String send(HttpRequest.Builder request, int expected) throws IOException, InterruptedException {
        HttpResponse<String> response = http.send(request.timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != expected) {
            throw new IOException("the provider answered " + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }
}
