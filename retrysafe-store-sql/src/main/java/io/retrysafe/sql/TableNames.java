package io.retrysafe.sql;

import io.retrysafe.internal.Require;
import java.util.regex.Pattern;

/**
 * What a store on this table layout accepts as a table name, and what a driver's SQLState says
 * about the connection: shared by the stores that use the table, over JDBC or over R2DBC.
 */
public final class TableNames {
    private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

    private TableNames() {
    }

    /**
     * {@code table}, if it is an unquoted SQL identifier, optionally schema-qualified, as it is put into SQL.
     *
     * @throws IllegalArgumentException otherwise
     */
    public static String checked(String table) {
        Require.notNull(table, "table");
        if (!TABLE.matcher(table).matches()) {
            throw new IllegalArgumentException("table must be an unquoted SQL identifier, optionally "
                    + "schema-qualified (letters, digits, underscores; at most 63 each), but was \"" + table + "\"");
        }
        return table;
    }

    /** How often a claim whose transaction the database rolled back ({@link #isRollbackState}) runs again. */
    public static final int ROLLBACK_RETRIES = 5;

    /**
     * Whether an SQLState says the database rolled the statement's transaction back so that it may be
     * run again: a serialization failure ({@code 40001}: a record a concurrent transaction wrote after a
     * REPEATABLE READ or SERIALIZABLE snapshot, or MariaDB's deadlock) or PostgreSQL's deadlock
     * ({@code 40P01}).
     */
    public static boolean isRollbackState(String sqlState) {
        return "40001".equals(sqlState) || "40P01".equals(sqlState);
    }

    /**
     * Whether an SQLState says the database could not be reached (class 08, a connection exception)
     * or is shutting down or not accepting connections yet (57P01–57P03), as opposed to answering.
     */
    public static boolean isUnreachableState(String sqlState) {
        return sqlState != null && (sqlState.startsWith("08") || sqlState.startsWith("57P0"));
    }
}
