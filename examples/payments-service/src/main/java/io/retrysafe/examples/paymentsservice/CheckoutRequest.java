package io.retrysafe.examples.paymentsservice;

import io.retrysafe.StepCodec;
import io.retrysafe.examples.paymentscommon.PaymentRequest;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.regex.Pattern;
import org.springframework.boot.json.JsonParseException;
import org.springframework.boot.json.JsonParserFactory;

/**
 * A checkout: {@code amount} cents from {@code account}, charged to {@code card} at the payment provider, for
 * {@code payer} (the authenticated user, not part of the body). It is the phased operation's input, saved with
 * its first step, so that the completer can finish a checkout nobody retried without the request.
 */
record CheckoutRequest(String payer, String account, Long amount, String card) {
    private static final Pattern CARD = Pattern.compile("[0-9]{12,19}");

    /** The body as a client sends it: {@code {"account":"acc-1","amount":2500,"card":"4242424242424242"}}. */
    record Body(String account, Long amount, String card) {
        /**
         * The members of a JSON body: a member that is not a string, or an amount that is not a whole number, is
         * read as absent. Admission refused a body labelled JSON that is not strict JSON (a member twice, say), so
         * what is read here is what its fingerprint covers.
         *
         * @throws JsonParseException if the body is not a JSON object
         */
        static Body parse(byte[] json) {
            Map<String, Object> members = JsonParserFactory.getJsonParser()
                    .parseMap(new String(json, StandardCharsets.UTF_8));
            return new Body(string(members.get("account")), wholeNumber(members.get("amount")),
                    string(members.get("card")));
        }

        private static String string(Object member) {
            return member instanceof String s ? s : null;
        }

        private static Long wholeNumber(Object member) {
            try {
                return member instanceof Number n ? new BigDecimal(n.toString()).longValueExact() : null;
            } catch (NumberFormatException | ArithmeticException e) { // not finite, a fraction, or too large
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
