package io.retrysafe.internal;

import java.time.Duration;

/** Argument checks whose messages follow one pattern: what was expected, "but was" what was given. */
public final class Require {
    private Require() {
    }

    public static <T> T notNull(T value, String name) {
        if (value == null) {
            // Not requireNonNull with a supplier: its lambda, capturing the name, is made on every call.
            throw new NullPointerException(name + " must not be null");
        }
        return value;
    }

    public static Duration positive(Duration value, String name) {
        notNull(value, name);
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, but was " + value);
        }
        return value;
    }

    public static Duration notNegative(Duration value, String name) {
        notNull(value, name);
        if (value.isNegative()) {
            throw new IllegalArgumentException(name + " must not be negative, but was " + value);
        }
        return value;
    }

    public static String notBlank(String value, String name) {
        notNull(value, name);
        if (value.isBlank()) {
            throw new IllegalArgumentException(name + " must not be blank, but was \"" + value + "\"");
        }
        return value;
    }

    /** Positive and whole milliseconds at least: stores count time in milliseconds. */
    public static Duration atLeastOneMilli(Duration value, String name) {
        positive(value, name);
        if (value.toMillis() < 1) {
            throw new IllegalArgumentException(name + " must be at least 1 ms, but was " + value);
        }
        return value;
    }

    public static int between(int value, int min, int max, String name) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", but was " + value);
        }
        return value;
    }

    /** A builder value without a default: {@code build()} refuses to go on without it, and says why it is needed. */
    public static void set(Object value, String name, String why) {
        if (value == null) {
            throw new IllegalStateException(name + " must be set: " + why);
        }
    }

    /** A builder value may be set once: setting it twice is almost always a configuration mistake. */
    public static void unset(Object current, String name) {
        if (current != null) {
            throw new IllegalStateException(name + " was already set to " + current);
        }
    }
}
