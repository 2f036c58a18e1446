package io.retrysafe.sql;

/**
 * Statement pieces that every dialect of the records table writes alike, each given the dialect's clock
 * ({@code statement_timestamp()}, {@code NOW(6)}) and bind markers.
 */
public final class RecordSql {
    private RecordSql() {
    }

    /**
     * The live record of a key: parameters 1 scope, 2 key; a record past {@code expires_at} is absent.
     */
    public static String inspect(String table, String now, BindMarkers markers) {
        return "SELECT fingerprint, status, attempt, created_at, lease_expires_at, completed_at, expires_at,"
                + " response_status, response_headers, response_body FROM " + table
                + " WHERE scope = " + markers.at(1, "varchar") + " AND idem_key = " + markers.at(2, "varchar")
                + " AND expires_at > " + now;
    }

    /**
     * The condition of an abandoned phased operation: saved steps of this life (the saved state belongs to the
     * record's {@code created_at} it was written with), not completed, nobody's lease, untouched since
     * {@code idleBefore}.
     */
    public static String abandonedPhases(String now, String idleBefore) {
        return " WHERE phase_created_at IS NOT NULL AND phase_created_at = created_at AND status <> 'COMPLETED'"
                + " AND lease_expires_at <= " + idleBefore + " AND expires_at > " + now;
    }
}
