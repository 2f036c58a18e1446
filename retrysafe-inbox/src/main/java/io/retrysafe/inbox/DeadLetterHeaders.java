package io.retrysafe.inbox;

import io.retrysafe.internal.Require;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The headers a dead letter carries on every broker, besides the original message's own (its id
 * header included, so that a dead letter published back to its origin is still deduplicated).
 * Values are text; numbers are decimal; none holds a line break. A header of one of these names
 * already on the message (a dead letter that failed again) is replaced.
 */
public final class DeadLetterHeaders {
    /** {@link DeadLetterReason#headerValue()}: {@code handler-failed}, {@code fingerprint-mismatch}, … */
    public static final String REASON = "retrysafe-dlt-reason";
    /** The failure's class and message (no stack trace) on one line, at most {@value #MAX_ERROR_LENGTH} characters. */
    public static final String ERROR = "retrysafe-dlt-error";
    /** How many times the handler ran: {@code 0} when it never did. */
    public static final String ATTEMPTS = "retrysafe-dlt-attempts";
    /** The inbox scope: {@code kafka:<consumer group>:<topic>}, {@code nats:<stream>:<consumer>}, … */
    public static final String SCOPE = "retrysafe-dlt-scope";
    /** Where the message was: {@code topic-partition@offset}, the stream sequence, … ({@link Delivery#position()}). */
    public static final String POSITION = "retrysafe-dlt-position";
    /** The broker's delivery count when it gave up; absent when the broker does not count. */
    public static final String DELIVERY_COUNT = "retrysafe-dlt-delivery-count";
    /** The message id as the adapter read it; absent when it had none. */
    public static final String MESSAGE_ID = "retrysafe-dlt-message-id";

    /** Every header name above, for adapters that remove them from a copied message first. */
    public static final List<String> NAMES = List.of(REASON, ERROR, ATTEMPTS, SCOPE, POSITION, DELIVERY_COUNT,
            MESSAGE_ID);

    /** The longest {@value #ERROR} value, in characters; a longer description is cut. */
    public static final int MAX_ERROR_LENGTH = 1024;

    private DeadLetterHeaders() {
    }

    /** The headers for {@code delivery}, dead-lettered for {@code reason} after {@code attempts} runs of its handler. */
    public static Map<String, String> of(Delivery delivery, DeadLetterReason reason, int attempts, String error) {
        Require.notNull(delivery, "delivery");
        Require.notNull(reason, "reason");
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put(REASON, reason.headerValue());
        headers.put(ERROR, oneLine(error == null ? "" : error));
        headers.put(ATTEMPTS, Integer.toString(attempts));
        headers.put(SCOPE, oneLine(delivery.scope()));
        headers.put(POSITION, oneLine(delivery.position()));
        if (delivery.isDeliveryCountKnown()) {
            headers.put(DELIVERY_COUNT, Integer.toString(delivery.deliveryCount()));
        }
        if (delivery.messageId() != null) {
            headers.put(MESSAGE_ID, oneLine(delivery.messageId()));
        }
        return Collections.unmodifiableMap(headers);
    }

    /**
     * A failure as the {@value #ERROR} header gives it: {@code class: message}, line breaks as
     * spaces, cut at {@value #MAX_ERROR_LENGTH} characters; empty for {@code null}.
     */
    public static String describe(Throwable failure) {
        if (failure == null) {
            return "";
        }
        String text = failure.getMessage() == null ? failure.getClass().getName()
                : failure.getClass().getName() + ": " + failure.getMessage();
        return oneLine(text);
    }

    private static String oneLine(String text) {
        String flat = text.replace("\r\n", " ").replace('\r', ' ').replace('\n', ' ');
        return flat.length() <= MAX_ERROR_LENGTH ? flat : flat.substring(0, MAX_ERROR_LENGTH);
    }
}
