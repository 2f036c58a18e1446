package io.retrysafe.jdbc.internal;

/**
 * How a driver marks a statement's bind parameters. The statements that several stores send
 * ({@link PostgresSqlText}) are written once and take the style of the store that sends them.
 */
public enum BindMarkers {
    /**
     * JDBC's {@code ?}: a parameter is bound by the place of its marker, so a statement sent this
     * way must place its markers in the order of their numbers.
     */
    QUESTION_MARKS,
    /** PostgreSQL's own {@code $1, $2, …}, which R2DBC's driver takes: a marker may stand anywhere. */
    NUMBERED;

    /** The marker of parameter {@code n} (from 1). */
    public String at(int n) {
        return this == QUESTION_MARKS ? "?" : "$" + n;
    }
}
