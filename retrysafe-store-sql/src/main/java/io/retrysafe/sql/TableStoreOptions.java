package io.retrysafe.sql;

import io.retrysafe.internal.Require;
import java.time.Duration;

/**
 * What the builder of every store on the records table collects and checks the same way: the JDBC
 * store's and the R2DBC store's builders each hold one and pass these settings on to it, so that a
 * table name, a lock timeout or a name refused by one is refused by the other with the same message.
 * Each value may be set once; unset values are the stores' shared defaults.
 */
public final class TableStoreOptions {
    /** The table of both stores unless their builder says otherwise. */
    public static final String DEFAULT_TABLE = "retrysafe_record";
    /** How long a claim of either store waits for a transaction holding its key, unless set. */
    public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(5);

    private String table;
    private Duration lockTimeout;
    private String name;

    /** An unquoted SQL identifier, optionally schema-qualified ({@link TableNames#checked}). */
    public void table(String table) {
        Require.unset(this.table, "table");
        this.table = TableNames.checked(table);
    }

    /** At least one millisecond: the bound is never zero, which PostgreSQL reads as no bound at all. */
    public void lockTimeout(Duration lockTimeout) {
        Require.unset(this.lockTimeout, "lockTimeout");
        this.lockTimeout = Require.atLeastOneMilli(lockTimeout, "lockTimeout");
    }

    /** Not blank: it prefixes the store's log lines and errors and names it in metrics. */
    public void name(String name) {
        Require.unset(this.name, "name");
        this.name = Require.notBlank(name, "name");
    }

    public String table() {
        return table == null ? DEFAULT_TABLE : table;
    }

    public Duration lockTimeout() {
        return lockTimeout == null ? DEFAULT_LOCK_TIMEOUT : lockTimeout;
    }

    /** The name set, else {@code kind + ":" + table()} ({@code jdbc:retrysafe_record}). */
    public String nameOr(String kind) {
        return name != null ? name : kind + ":" + table();
    }
}
