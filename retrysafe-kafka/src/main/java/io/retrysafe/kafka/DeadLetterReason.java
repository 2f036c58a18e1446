package io.retrysafe.kafka;

/** Why a record went to the dead-letter topic; {@link #headerValue()} is the {@value DeadLetterHeaders#REASON} header. */
public enum DeadLetterReason {
    /** The record has no message id. */
    MISSING_MESSAGE_ID("missing-message-id"),
    /** The record's message id breaks the key rules (empty, too long, not printable ASCII, several values). */
    INVALID_MESSAGE_ID("invalid-message-id"),
    /** The message id was processed before with another payload: a producer bug, not a redelivery. */
    FINGERPRINT_MISMATCH("fingerprint-mismatch"),
    /** The handler threw on every one of its attempts. */
    HANDLER_FAILED("handler-failed");

    private final String headerValue;

    DeadLetterReason(String headerValue) {
        this.headerValue = headerValue;
    }

    /** The value of the {@value DeadLetterHeaders#REASON} header; stable, for tools that route dead letters. */
    public String headerValue() {
        return headerValue;
    }
}
