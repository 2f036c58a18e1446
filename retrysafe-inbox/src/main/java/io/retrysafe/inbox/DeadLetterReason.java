package io.retrysafe.inbox;

import java.util.Locale;

/**
 * Why a message must be dead-lettered; {@link #headerValue()} is the {@value DeadLetterHeaders#REASON}
 * header, the same on every broker.
 */
public enum DeadLetterReason {
    /** The message has no id. Never run: without an id a redelivery cannot be recognised. */
    MISSING_MESSAGE_ID,
    /** The message's id breaks the key rules (empty, too long, not printable ASCII, several values), or reading it failed. */
    INVALID_MESSAGE_ID,
    /** The payload's bytes cannot be had for the fingerprint (a type {@link PayloadBytes} does not know, or it threw). */
    UNREADABLE_PAYLOAD,
    /** The id was processed before with another payload: a producer reused an id, not a redelivery. */
    FINGERPRINT_MISMATCH,
    /** The handler threw on each of its {@code maxAttempts} attempts. */
    HANDLER_FAILED,
    /** The handler threw an exception the inbox is configured to treat as permanent: not tried again. */
    PERMANENT_FAILURE;

    /** Lower case with hyphens, {@code handler-failed}: stable, for tools that route dead letters. */
    public String headerValue() {
        return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
