package io.retrysafe.jdbc.internal;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.FoundRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.sql.Schema;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

/**
 * How a PostgreSQL records table is laid out, given to each of the dialect's statement types: the
 * writes that keep one key's record unique, and what the storage changes for the operators and the
 * purge. Everything else is the same in every layout and lives in those types.
 * {@link PostgresStandardLayout}: one table whose primary key serialises the writes of a key.
 * {@link PostgresPartitionedLayout}: partitioned by expiry day, every write of a key through the
 * schema's functions, serialised on the key's advisory lock.
 */
public sealed interface PostgresLayout permits PostgresStandardLayout, PostgresPartitionedLayout {

    /** The shipped DDL of this layout, a resource with {@code ${table}} and {@code ${name}} to fill in. */
    Schema schema();

    // ---------------------------------------------------------------- request path (PostgresRequestSql)

    /**
     * One round trip: inserts an absent key, or takes over a record that {@link io.retrysafe.spi.ClaimDecision}
     * would take over, waiting at most {@code lockTimeout} for a concurrent holder (past it, SQLState
     * 55P03 and an aborted transaction). With {@code inTransaction} the claim joined a transaction that goes
     * on after it, and the bound is put back; otherwise the claim is a transaction of its own (standalone),
     * whose end ends the bound, and the statement that would put it back is not sent.
     */
    Claim claim(Connection c, ClaimRequest request, Duration lockTimeout, boolean inTransaction) throws SQLException;

    /** What {@link #claim} answered. */
    record Claim(int attempt, FoundRecord found) {
        /** It claimed the key as {@code attempt}. */
        static Claim claimed(int attempt) {
            return new Claim(attempt, null);
        }

        /** It did not claim; {@code found} is the record it returned, null if the caller has to read it. */
        static Claim notClaimed(FoundRecord found) {
            return new Claim(0, found);
        }

        boolean isClaimed() {
            return attempt > 0;
        }
    }

    /** {@link RequestSql#complete}. */
    boolean complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention,
            boolean commit) throws SQLException;

    /** {@link RequestSql#release}. */
    boolean release(Connection c, IdempotencyKey key, OwnerToken token) throws SQLException;

    /**
     * Whether a second plain {@code INSERT} of a key fails on the one already there. Writing the key
     * last needs it: the loser's insert must abort its transaction before the commit.
     */
    boolean hasUniqueKey();

    // ---------------------------------------------------------------- operators (PostgresOperatorSql)

    /** {@link OperatorSql#forceRelease}. */
    boolean forceRelease(Connection c, IdempotencyKey key, Integer attempt, Duration lockTimeout) throws SQLException;

    /** {@link OperatorSql#tableBytes}. */
    long tableBytes(Connection c) throws SQLException;

    // ---------------------------------------------------------------- maintenance (PostgresMaintenanceSql)

    /** {@link MaintenanceSql#purgeBatch}'s statement, with the batch size its one parameter. */
    String purgeSql();

    /**
     * A run's batches, each from where the last ended ({@code PostgresSqlText.purgeFrom()}); null where a
     * run's batches are {@link #purgeSql()} over and over.
     */
    default String purgeFromSql() {
        return null;
    }
}
