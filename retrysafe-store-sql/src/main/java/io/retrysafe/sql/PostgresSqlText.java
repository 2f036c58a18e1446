package io.retrysafe.sql;

import io.retrysafe.internal.Hex;
import java.time.Duration;

/**
 * The text of the PostgreSQL statements on one table that more than one store sends: the JDBC store
 * (through its standard layout, request and operator statements) and the R2DBC store, which share the table and must keep one semantics (a record written by one is
 * replayed by the other). Each statement is written here once; only its bind markers
 * ({@link BindMarkers}: JDBC's {@code ?}, or {@code $n} cast to the parameter's type) follow the
 * store that sends it. The parameters are numbered as each method says, the same for both stores.
 *
 * <p>The claim is written in two forms from the same pieces (the same bound, the same row, the same
 * takeover): the lock bound, the insert and the bound's restore as three statements in one round trip
 * ({@link #claimStatements()}), which JDBC sends inside a transaction that goes on after the claim; and
 * one statement whose insert reads its row from a sub-select that sets the bound first
 * ({@link #claimStatement()}), which R2DBC always sends (it runs one statement at a time) and JDBC sends
 * where the claim is its own transaction, whose end ends the bound.
 */
public final class PostgresSqlText {
    /** SQLState: a lock was not granted within {@code lock_timeout}. */
    public static final String LOCK_NOT_AVAILABLE = "55P03";

    /**
     * The clock of every statement: the database's, and unlike {@code now()} it does not stand still over a
     * long transaction.
     */
    public static final String CLOCK = "statement_timestamp()";
    private static final String T = CLOCK;

    private static final String RESTORED = "set_config('lock_timeout', current_setting('retrysafe.saved_lock_timeout'),"
            + " true)";

    /** Puts back the {@code lock_timeout} that {@link #setLockTimeout()} saved, for the rest of the transaction. */
    public static final String RESTORE_LOCK_TIMEOUT = "SELECT " + RESTORED;

    private final String table;
    private final BindMarkers markers;

    public PostgresSqlText(String table, BindMarkers markers) {
        this.table = table;
        this.markers = markers;
    }

    /** The value of {@link #setLockTimeout()}'s parameter: milliseconds, at least one (0 is no bound). */
    public static String lockTimeout(Duration lockTimeout) {
        return Long.toString(Math.max(1, lockTimeout.toMillis()));
    }

    private String p(int n, String type) {
        return markers.at(n, type);
    }

    /**
     * Saves the session's {@code lock_timeout} and sets it to parameter 1 (milliseconds, as text):
     * {@code set_config(…, true)} is {@code SET LOCAL}, so it ends with the transaction (standalone,
     * with the statement), and {@link #RESTORE_LOCK_TIMEOUT} puts the saved value back sooner, so
     * that neither the rest of the application's transaction nor its later use of the connection
     * waits under it.
     */
    public String setLockTimeout() {
        return setLockTimeout(1);
    }

    private String setLockTimeout(int parameter) {
        return "SELECT set_config('retrysafe.saved_lock_timeout', current_setting('lock_timeout'), true),"
                + " set_config('lock_timeout', " + p(parameter, "text") + ", true)";
    }

    // ---------------------------------------------------------------- claim (standard layout)

    /**
     * The standard layout's claim as JDBC sends it, three statements in one round trip: the lock
     * bound ({@link #setLockTimeout()}), the insert or takeover returning the attempt, the bound's
     * restore. Parameters: 1 the lock bound, 2 scope, 3 key, 4 fingerprint, 5 token, 6 lease and
     * 7 retention in milliseconds.
     */
    public String claimStatements() {
        return setLockTimeout() + ";" + claimInsert() + " SELECT * FROM (SELECT " + claimRow(2) + ") AS v"
                + CLAIM_COLUMNS + unlessCompleted() + claimTakeover() + ";" + RESTORE_LOCK_TIMEOUT;
    }

    /**
     * The standard layout's claim as one statement: the insert reads its row from a sub-select of
     * {@link #setLockTimeout()}, so that the bound is in force before the insert can wait on the key. Where
     * the claim is its own transaction the bound ends with it; in a transaction that goes on,
     * {@link #RESTORE_LOCK_TIMEOUT} must follow it. The bound comes last in the text, and so in the
     * parameters: 1 scope, 2 key, 3 fingerprint, 4 token, 5 lease and 6 retention in milliseconds, 7 the
     * lock bound.
     */
    public String claimStatement() {
        return claimInsert() + " SELECT * FROM (SELECT " + claimRow(1) + " FROM (" + setLockTimeout(7)
                + ") AS bound) AS v" + CLAIM_COLUMNS + unlessCompleted() + claimTakeover();
    }

    private static final String CLAIM_COLUMNS = "(scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
            + " lease_expires_at, expires_at)";

    private String claimInsert() {
        return "INSERT INTO " + table + " AS r " + CLAIM_COLUMNS;
    }

    /**
     * No insert, and so no conflict and no lock on the row, when the key's record is completed and live as the
     * statement begins: it does not change until it is purged, and the caller reads it ({@link #select()}) to
     * replay it. Without this, {@code ON CONFLICT DO UPDATE} locks the row even where its WHERE updates nothing,
     * and every replay of a key would wait for the one before it (in transactional mode, until its commit).
     */
    private String unlessCompleted() {
        return " WHERE NOT EXISTS (SELECT 1 FROM " + table + " d WHERE d.scope = v.scope AND d.idem_key = v.idem_key"
                + " AND d.status = 'COMPLETED' AND d.expires_at > " + T + ")";
    }

    /** The claim's row; its six parameters (scope, key, fingerprint, token, lease, retention) from {@code first}. */
    private String claimRow(int first) {
        return p(first, "varchar") + ", " + p(first + 1, "varchar") + ", " + p(first + 2, "bytea") + ", 'IN_PROGRESS', "
                + p(first + 3, "uuid") + ", 1, " + T + ", " + T + " + " + p(first + 4, "bigint")
                + " * interval '1 millisecond', " + T + " + " + p(first + 5, "bigint") + " * interval '1 millisecond'";
    }

    /**
     * The WHERE is ClaimDecision's takeover in SQL: the takeover must be the claim's own statement,
     * atomic with the insert. When it changes nothing, the caller reads the record ({@link #select()})
     * and ClaimDecision answers.
     */
    private String claimTakeover() {
        return " ON CONFLICT (scope, idem_key) DO UPDATE SET"
                + " fingerprint = EXCLUDED.fingerprint, status = 'IN_PROGRESS', owner_token = EXCLUDED.owner_token,"
                + TAKEOVER_LIFE + ", lease_expires_at = EXCLUDED.lease_expires_at, completed_at = NULL,"
                + " expires_at = EXCLUDED.expires_at, response_status = NULL, response_headers = NULL,"
                + " response_body = NULL" + TAKEOVER_WHERE + " RETURNING attempt";
    }

    /** A taken-over record's attempt and creation: a new life when it had expired, the next attempt otherwise. */
    private static final String TAKEOVER_LIFE = " attempt = CASE WHEN r.expires_at <= " + T
            + " THEN 1 ELSE r.attempt + 1 END, created_at = CASE WHEN r.expires_at <= " + T + " THEN " + T
            + " ELSE r.created_at END";

    /**
     * Which record ({@code r}) a new attempt ({@code EXCLUDED}) may take over: expired, or this body's released or
     * abandoned one.
     */
    private static final String TAKEOVER_WHERE = " WHERE r.expires_at <= " + T
            + " OR (r.fingerprint = EXCLUDED.fingerprint AND (r.status = 'FAILED'"
            + " OR (r.status = 'IN_PROGRESS' AND r.lease_expires_at <= " + T + ")))";

    // ---------------------------------------------------------------- request path

    /**
     * The record as committed, read without waiting, in any layout: fingerprint, status, response
     * status, headers and body, the lease left in milliseconds (by the database's clock), and whether
     * it expired. Parameters: 1 scope, 2 key.
     */
    public String select() {
        return "SELECT fingerprint, status, response_status, response_headers, response_body,"
                + " CEIL(EXTRACT(EPOCH FROM (lease_expires_at - " + T + ")) * 1000)::bigint,"
                + " expires_at <= " + T + " FROM " + table + " WHERE scope = " + p(1, "varchar") + " AND idem_key = "
                + p(2, "varchar");
    }

    /**
     * Key last's insert of the record, completed with its response, sent with the commit: one statement,
     * the lock bound and its restore in it. The row is read from a sub-select that sets the bound
     * ({@link #setLockTimeout()}), so the bound is in force before the insert can wait on the key; its
     * {@code RETURNING}, computed once the row and its key are in, puts the saved value back, so that the
     * rest of the transaction and the deferred checks of its {@code COMMIT} wait as they would without
     * RetrySafe (where the insert fails, the transaction is aborted, and the bound with it). A plain
     * {@code INSERT}, so that a key another attempt committed is an error (23505) that aborts the
     * transaction before its {@code COMMIT} runs; {@code ON CONFLICT DO NOTHING} would commit the loser's
     * writes. Only the JDBC store sends it; it is written here so that the benchmarks that time each
     * statement run the store's own text. Parameters: 1 scope, 2 key, 3 fingerprint, 4 token, 5 retention
     * in milliseconds, 6 response status, 7 headers, 8 body, 9 the lock bound.
     */
    public String insertCompleted() {
        return "INSERT INTO " + table + COMPLETED_COLUMNS + completedRow() + " RETURNING " + RESTORED;
    }

    private static final String COMPLETED_COLUMNS = " (scope, idem_key, fingerprint, status, owner_token, attempt,"
            + " created_at, lease_expires_at, completed_at, expires_at, response_status, response_headers,"
            + " response_body)";

    private String completedRow() {
        return " SELECT " + p(1, "varchar") + ", " + p(2, "varchar") + ", " + p(3, "bytea") + ", 'COMPLETED', "
                + p(4, "uuid") + ", 1, " + T + ", " + T + ", " + T + ", " + T + " + " + p(5, "bigint")
                + " * interval '1 millisecond', " + p(6, "smallint") + ", " + p(7, "text") + ", " + p(8, "bytea")
                + " FROM (" + setLockTimeout(9) + ") AS bound";
    }

    /** What {@link #insertCompletedOrTakeOver()} fails with when the key's record is not its to take: 22P02. */
    public static final String KEY_NOT_TAKEN = "22P02";

    /**
     * Key last without a look-up: {@link #insertCompleted()}, or, where the key has a record, the takeover a
     * claim would make ({@link #claimTakeover()}'s condition), written completed; the bound and its restore as
     * in {@link #insertCompleted()}. Where it can do neither (a live completed record, another body's, an
     * attempt in progress), the statement fails with {@link #KEY_NOT_TAKEN}, and so aborts the transaction
     * before its {@code COMMIT}: an upsert that changed nothing would commit the loser's writes. The error is
     * a cast of a text that says why, evaluated only once the insert wrote no row. The parameters of
     * {@link #insertCompleted()}.
     */
    public String insertCompletedOrTakeOver() {
        return "WITH w AS (INSERT INTO " + table + " AS r" + COMPLETED_COLUMNS + completedRow()
                + " ON CONFLICT (scope, idem_key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,"
                + " status = 'COMPLETED', owner_token = EXCLUDED.owner_token," + TAKEOVER_LIFE + ", lease_expires_at = "
                + T + ", completed_at = " + T + ", expires_at = EXCLUDED.expires_at, response_status ="
                + " EXCLUDED.response_status, response_headers = EXCLUDED.response_headers, response_body ="
                + " EXCLUDED.response_body" + TAKEOVER_WHERE + " RETURNING " + RESTORED + ")"
                + " SELECT CAST(CASE WHEN count(*) = 0 THEN 'retrysafe: the key has a record this attempt cannot take'"
                + " ELSE '1' END AS integer) FROM w";
    }

    /**
     * The standard layout's completion. With {@code fenced}, only while the token's attempt is in
     * progress and not expired; without, by the token alone, for the claim's own transaction, where the
     * row is locked since the claim. Parameters: 1 retention in milliseconds, 2 response status,
     * 3 headers, 4 body, 5 scope, 6 key, 7 token.
     */
    public String complete(boolean fenced) {
        String complete = "UPDATE " + table + " SET status = 'COMPLETED', completed_at = " + T + ", expires_at = " + T
                + " + " + p(1, "bigint") + " * interval '1 millisecond', response_status = " + p(2, "smallint")
                + ", response_headers = " + p(3, "text") + ", response_body = " + p(4, "bytea") + " WHERE scope = "
                + p(5, "varchar") + " AND idem_key = " + p(6, "varchar") + " AND owner_token = " + p(7, "uuid");
        return fenced ? complete + " AND status = 'IN_PROGRESS' AND expires_at > " + T : complete;
    }

    /**
     * Sets the lease to parameter 1 milliseconds from now, in any layout, if the token holds the key,
     * in progress and not expired. Parameters: 1 lease, 2 scope, 3 key, 4 token.
     */
    public String renewLease() {
        return "UPDATE " + table + " SET lease_expires_at = " + T + " + " + p(1, "bigint")
                + " * interval '1 millisecond' WHERE scope = " + p(2, "varchar") + " AND idem_key = " + p(3, "varchar")
                + " AND owner_token = " + p(4, "uuid") + " AND status = 'IN_PROGRESS' AND expires_at > " + T;
    }

    /**
     * The standard layout's release: FAILED if the token holds the key, its lease ended now (nobody holds
     * it; the completer of phased operations counts its idle time from here). Parameters: 1 scope, 2 key,
     * 3 token.
     */
    public String release() {
        return "UPDATE " + table + " SET status = 'FAILED', lease_expires_at = LEAST(lease_expires_at, " + T
                + ") WHERE scope = " + p(1, "varchar") + " AND idem_key = "
                + p(2, "varchar") + " AND owner_token = " + p(3, "uuid") + " AND status = 'IN_PROGRESS' AND expires_at > " + T;
    }

    // ---------------------------------------------------------------- phased operations

    /**
     * Saves a local step's state (parameter 1) with the key for this life of the record and sets the lease
     * to parameter 2 milliseconds from now, if the token holds the key, in progress and not expired; in the
     * step's own transaction. Parameters: 1 state, 2 lease, 3 scope, 4 key, 5 token.
     */
    public String advancePhase() {
        return "UPDATE " + table + " SET phase_state = " + p(1, "bytea") + ", phase_created_at = created_at,"
                + " lease_expires_at = " + T + " + " + p(2, "bigint") + " * interval '1 millisecond' WHERE scope = "
                + p(3, "varchar") + " AND idem_key = " + p(4, "varchar") + " AND owner_token = " + p(5, "uuid")
                + " AND status = 'IN_PROGRESS' AND expires_at > " + T;
    }

    /**
     * The key's saved state of this life (null when an earlier life saved it), if the token holds the key;
     * one unnamed column. Parameters: 1 scope, 2 key, 3 token.
     */
    public String readPhase() {
        return "SELECT CASE WHEN phase_created_at = created_at THEN phase_state END FROM " + table
                + " WHERE scope = " + p(1, "varchar") + " AND idem_key = " + p(2, "varchar") + " AND owner_token = "
                + p(3, "uuid") + " AND status = 'IN_PROGRESS' AND expires_at > " + T;
    }

    /**
     * The abandoned operations' scope, key and fingerprint, oldest first: untouched for parameter 1
     * milliseconds, at most parameter 2 of them.
     */
    public String abandonedPhases() {
        return "SELECT scope, idem_key, fingerprint FROM " + table + RecordSql.abandonedPhases(T, idleBefore())
                + " ORDER BY lease_expires_at LIMIT " + p(2, "integer");
    }

    /** How many operations are abandoned, untouched for parameter 1 milliseconds. */
    public String countAbandonedPhases() {
        return "SELECT count(*) FROM " + table + RecordSql.abandonedPhases(T, idleBefore());
    }

    private String idleBefore() {
        return T + " - " + p(1, "bigint") + " * interval '1 millisecond'";
    }

    /**
     * Takes the session-level advisory lock numbered parameter 1 ({@link #lockId}) if it is free; one boolean.
     * Held by the connection until {@link #advisoryUnlock} or its session ends.
     */
    public static String tryAdvisoryLock(BindMarkers markers) {
        return "SELECT pg_try_advisory_lock(" + markers.at(1, "bigint") + ")";
    }

    /** Gives back the advisory lock numbered parameter 1. */
    public static String advisoryUnlock(BindMarkers markers) {
        return "SELECT pg_advisory_unlock(" + markers.at(1, "bigint") + ")";
    }

    /**
     * The number of the advisory lock named {@code name}: advisory locks are numbered, and a stable 64-bit
     * hash of the name gives each name one number, the same in every store and process.
     */
    public static long lockId(String name) {
        byte[] h = Hex.sha256(name);
        long id = 0;
        for (int i = 0; i < 8; i++) {
            id = (id << 8) | (h[i] & 0xff);
        }
        return id;
    }

    // ---------------------------------------------------------------- operators and maintenance

    /** The live record, the operators' inspect's columns. Parameters: 1 scope, 2 key. */
    public String inspect() {
        return RecordSql.inspect(table, T, markers);
    }

    /**
     * The standard layout's purge batch: at most parameter 1 expired records, oldest first, skipping
     * rows locked by others.
     */
    public String purge() {
        return "DELETE FROM " + table + " WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM " + table
                + " WHERE expires_at <= " + T + " ORDER BY expires_at LIMIT " + p(1, "integer")
                + " FOR UPDATE SKIP LOCKED)";
    }

    /**
     * {@link #purge()} for a run's next batch: it starts at parameter 1, the latest {@code expires_at} the
     * run's last batch deleted (null for its first), takes at most parameter 2 records, and answers how many
     * it deleted and their latest {@code expires_at}. Until a vacuum, the index keeps an entry for every row
     * deleted before, and a batch that started at the oldest would read past all of them: a run's cost would
     * grow with the square of what it deleted. Rows below the start that were skipped as locked are left to
     * the next run.
     */
    public String purgeFrom() {
        return "WITH d AS (DELETE FROM " + table + " WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM " + table
                + " WHERE expires_at <= " + T + " AND expires_at >= COALESCE(" + p(1, "timestamptz")
                + ", '-infinity'::timestamptz) ORDER BY expires_at LIMIT " + p(2, "integer") + " FOR UPDATE SKIP LOCKED)"
                + " RETURNING expires_at) SELECT count(*), max(expires_at) FROM d";
    }
}
