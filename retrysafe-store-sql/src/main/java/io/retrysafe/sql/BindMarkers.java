package io.retrysafe.sql;

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
    /**
     * PostgreSQL's own {@code $1, $2, …}, which R2DBC's driver takes: a marker may stand anywhere. Each
     * is cast to its parameter's SQL type ({@code $4::bytea}), as the R2DBC store's statements always
     * were: its claim reads its row from a {@code SELECT} list, where no column gives a parameter its type.
     */
    NUMBERED;

    /** The marker of parameter {@code n} (from 1), whose SQL type is {@code type}. */
    public String at(int n, String type) {
        return this == QUESTION_MARKS ? "?" : "$" + n + "::" + type;
    }
}
