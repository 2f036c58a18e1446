package io.retrysafe.examples.paymentsservice;

import io.retrysafe.ResponseCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.ProblemType;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code POST /checkouts} answers, stored for the key and replayed to its retries: the checkout's
 * {@code 201}, or a problem of the checkout's own (declined, cancelled, insufficient funds, unknown account).
 *
 * @param status the HTTP status
 * @param location the {@code Location} of the booked payment, or null
 * @param body the JSON document
 */
record CheckoutAnswer(int status, String location, String body) {
    static final String JSON = "application/json";

    /** {@code 201}: the charge booked as payment {@code payment}, which {@code GET /payments/{id}} shows. */
    static CheckoutAnswer completed(CheckoutRequest request, Checkout.Booked booked) {
        return new CheckoutAnswer(201, "/payments/" + booked.payment(), "{\"id\":\"" + booked.payment()
                + "\",\"status\":\"completed\",\"account\":\"" + request.account() + "\",\"amount\":" + request.amount()
                + ",\"charge\":\"" + booked.charge() + "\",\"balance\":" + booked.balance() + "}");
    }

    /** A problem of type {@code /problems/<slug>}, with {@code extra} (encoded JSON members, may be null). */
    static CheckoutAnswer problem(int status, String slug, String title, String detail, String extra) {
        StringBuilder json = new StringBuilder("{\"type\":\"").append(ProblemType.TYPE_BASE).append(slug)
                .append("\",\"title\":\"").append(title).append("\",\"status\":").append(status).append(",\"detail\":");
        ProblemType.quote(detail, json);
        if (extra != null) {
            json.append(',').append(extra);
        }
        return new CheckoutAnswer(status, null, json.append('}').toString());
    }

    String contentType() {
        return status < 300 ? JSON : ProblemType.CONTENT_TYPE;
    }

    static final ResponseCodec<CheckoutAnswer> CODEC = new ResponseCodec<>() {
        @Override
        public StoredResponse encode(CheckoutAnswer answer) {
            Map<String, List<String>> headers = new LinkedHashMap<>();
            headers.put("Content-Type", List.of(answer.contentType()));
            if (answer.location != null) {
                headers.put("Location", List.of(answer.location));
            }
            return StoredResponse.of(answer.status, headers, answer.body.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public CheckoutAnswer decode(StoredResponse stored) {
            List<String> location = stored.headers().get("Location");
            return new CheckoutAnswer(stored.status(), location == null ? null : location.get(0),
                    new String(stored.body(), StandardCharsets.UTF_8));
        }
    };
}
