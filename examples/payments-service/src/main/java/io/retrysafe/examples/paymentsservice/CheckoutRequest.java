package io.retrysafe.examples.paymentsservice;

import io.retrysafe.CanonicalJson;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.StepCodec;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A checkout: {@code amount} cents from {@code account}, charged to {@code card} at the payment provider, for
 * {@code payer} (the authenticated user, not part of the body). It is the phased operation's input, saved with
 * its first step, so that the completer can finish a checkout nobody retried without the request.
 */
record CheckoutRequest(String payer, String account, Long amount, String card) {
    private static final Pattern CARD = Pattern.compile("[0-9]{12,19}");

    /** The body as a client sends it: {@code {"account":"acc-1","amount":2500,"card":"4242424242424242"}}. */
    record Body(String account, Long amount, String card) {
        private static final List<String> MEMBERS = List.of("/account", "/amount", "/card");
        /** A member of the canonical form: no white space, strings without a raw quote. */
        private static final Pattern MEMBER = Pattern.compile("\"/(account|amount|card)\":(\"([^\"\\\\]*)\"|[^,}]*)");

        /**
         * The members of a JSON body, with the parser that fingerprints it (whatever the application's JSON
         * library): a string that is not a plain one, or an amount that is not a whole number, is read as absent.
         *
         * @throws MalformedJsonException if the body is not JSON
         */
        static Body parse(byte[] json) {
            String canonical = new String(CanonicalJson.canonicalize(json, MEMBERS), StandardCharsets.UTF_8);
            Map<String, String> strings = new HashMap<>();
            Map<String, String> others = new HashMap<>();
            Matcher m = MEMBER.matcher(canonical);
            while (m.find()) {
                (m.group(3) != null ? strings : others).put(m.group(1), m.group(3) != null ? m.group(3) : m.group(2));
            }
            return new Body(strings.get("account"), wholeNumber(others.get("amount")), strings.get("card"));
        }

        private static Long wholeNumber(String token) {
            try {
                return token == null ? null : Long.valueOf(token);
            } catch (NumberFormatException e) {
                return null;
            }
        }
    }

    static CheckoutRequest of(String payer, Body body) {
        return body == null ? new CheckoutRequest(payer, null, null, null)
                : new CheckoutRequest(payer, body.account(), body.amount(), body.card());
    }

    /** Why the request is not a checkout, or null when it is one. */
    String invalidReason() {
        String payment = new PaymentRequest(account, amount).invalidReason();
        if (payment != null) {
            return payment;
        }
        if (card == null || !CARD.matcher(card).matches()) {
            return "card must be 12 to 19 digits, but was " + (card == null ? "missing" : card);
        }
        return null;
    }

    /** The input as saved with the key: its four fields, one a line (none of them can hold a line break). */
    static final StepCodec<CheckoutRequest> CODEC = new StepCodec<>() {
        @Override
        public byte[] encode(CheckoutRequest r) {
            return String.join("\n", r.payer, r.account, Long.toString(r.amount), r.card)
                    .getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public CheckoutRequest decode(byte[] saved) {
            String[] f = new String(saved, StandardCharsets.UTF_8).split("\n", -1);
            return new CheckoutRequest(f[0], f[1], Long.parseLong(f[2]), f[3]);
        }
    };
}
