package io.retrysafe.examples.paymentscommon;

import java.util.regex.Pattern;

/** {@code {"account":"acc-1","amount":100}}: the amount in minor units (cents). */
public record PaymentRequest(String account, Long amount) {
    public static final long MAX_AMOUNT = 1_000_000_000_000L;
    private static final Pattern ACCOUNT = Pattern.compile("[A-Za-z0-9-]{1,64}");

    /** Why the request is not a payment, or null when it is one. */
    public String invalidReason() {
        if (account == null || !ACCOUNT.matcher(account).matches()) {
            return "account must be 1 to 64 letters, digits or '-', but was " + (account == null ? "missing" : account);
        }
        if (amount == null || amount <= 0 || amount > MAX_AMOUNT) {
            return "amount must be a whole number of cents from 1 to " + MAX_AMOUNT + ", but was "
                    + (amount == null ? "missing" : amount);
        }
        return null;
    }
}
