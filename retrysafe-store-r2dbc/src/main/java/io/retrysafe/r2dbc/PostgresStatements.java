package io.retrysafe.r2dbc;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.Readable;
import io.r2dbc.spi.Result;
import io.r2dbc.spi.Statement;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The JDBC store's PostgreSQL statements on one R2DBC connection, for the same table: the same
 * claim ({@code INSERT … ON CONFLICT DO UPDATE … WHERE}), the same fencing by owner token, the same
 * clock ({@code statement_timestamp()}), the same purge. Each method is one atomic step and leaves
 * transaction control to its caller.
 *
 * <p>The texts follow the JDBC store's PostgreSQL dialect, with two differences that R2DBC needs:
 * {@code $n} bind markers, and a claim that is one statement (an extended-protocol statement cannot
 * hold three), whose lock bound is set by a sub-select the insert reads its row from, so that it is
 * in force before the insert can wait on the key.
 */
final class PostgresStatements {
    static final String LOCK_NOT_AVAILABLE = "55P03";
    /** A claim that finds the record changing under it (purged, expired, released) tries again this often. */
    private static final int CLAIM_ROUNDS = 3;
    private static final String T = "statement_timestamp()";

    private final String claimSql;
    private final String restoreLockTimeoutSql;
    private final String selectSql;
    private final String completeSql;
    private final String completeHeldSql;
    private final String releaseSql;
    private final String renewSql;
    private final String inspectSql;
    private final String purgeSql;

    PostgresStatements(String table) {
        // set_config(…, true) is SET LOCAL: in a statement of its own (standalone) it ends with it; in
        // a transaction, restoreLockTimeoutSql puts the saved value back right after the claim.
        claimSql = "INSERT INTO " + table + " AS r (scope, idem_key, fingerprint, status, owner_token, attempt,"
                + " created_at, lease_expires_at, expires_at)"
                + " SELECT $2::varchar, $3::varchar, $4::bytea, 'IN_PROGRESS', $5::uuid, 1, " + T + ", " + T
                + " + $6::bigint * interval '1 millisecond', " + T + " + $7::bigint * interval '1 millisecond'"
                + " FROM (SELECT set_config('retrysafe.saved_lock_timeout', current_setting('lock_timeout'), true),"
                + " set_config('lock_timeout', $1::text, true)) AS bound"
                + " ON CONFLICT (scope, idem_key) DO UPDATE SET"
                + " fingerprint = EXCLUDED.fingerprint, status = 'IN_PROGRESS', owner_token = EXCLUDED.owner_token,"
                + " attempt = CASE WHEN r.expires_at <= " + T + " THEN 1 ELSE r.attempt + 1 END,"
                + " created_at = CASE WHEN r.expires_at <= " + T + " THEN " + T + " ELSE r.created_at END,"
                + " lease_expires_at = EXCLUDED.lease_expires_at, completed_at = NULL, expires_at = EXCLUDED.expires_at,"
                + " response_status = NULL, response_headers = NULL, response_body = NULL"
                + " WHERE r.expires_at <= " + T
                + " OR (r.fingerprint = EXCLUDED.fingerprint AND (r.status = 'FAILED'"
                + " OR (r.status = 'IN_PROGRESS' AND r.lease_expires_at <= " + T + ")))"
                + " RETURNING attempt";
        restoreLockTimeoutSql = "SELECT set_config('lock_timeout', current_setting('retrysafe.saved_lock_timeout'),"
                + " true)";
        selectSql = "SELECT fingerprint, status, response_status, response_headers, response_body,"
                + " CEIL(EXTRACT(EPOCH FROM (lease_expires_at - " + T + ")) * 1000)::bigint AS lease_millis,"
                + " expires_at <= " + T + " AS expired FROM " + table + " WHERE scope = $1 AND idem_key = $2";
        String complete = "UPDATE " + table + " SET status = 'COMPLETED', completed_at = " + T + ", expires_at = " + T
                + " + $1::bigint * interval '1 millisecond', response_status = $2::smallint,"
                + " response_headers = $3::text, response_body = $4::bytea"
                + " WHERE scope = $5 AND idem_key = $6 AND owner_token = $7::uuid";
        completeSql = complete + " AND status = 'IN_PROGRESS' AND expires_at > " + T;
        // In the claim's own transaction the row is locked since the claim, so the token alone fences it.
        completeHeldSql = complete;
        renewSql = "UPDATE " + table + " SET lease_expires_at = " + T + " + $1::bigint * interval '1 millisecond'"
                + " WHERE scope = $2 AND idem_key = $3 AND owner_token = $4::uuid AND status = 'IN_PROGRESS'"
                + " AND expires_at > " + T;
        releaseSql = "UPDATE " + table + " SET status = 'FAILED'"
                + " WHERE scope = $1 AND idem_key = $2 AND owner_token = $3::uuid AND status = 'IN_PROGRESS'"
                + " AND expires_at > " + T;
        inspectSql = "SELECT fingerprint, status, attempt, created_at, lease_expires_at, completed_at, expires_at,"
                + " response_status, response_headers, response_body FROM " + table
                + " WHERE scope = $1 AND idem_key = $2 AND expires_at > " + T;
        purgeSql = "DELETE FROM " + table + " WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM " + table
                + " WHERE expires_at <= " + T + " ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)";
    }

    /**
     * The atomic insert-if-absent or takeover, then, if it did not claim, the decision from the
     * record as committed. Waits at most {@code lockTimeout} for a transaction holding the key; past
     * it, fails with SQLState {@link #LOCK_NOT_AVAILABLE} (the caller answers in progress, and undoes
     * what the database aborted). With {@code inTransaction}, the lock bound is put back after a claim.
     */
    Mono<ClaimResult> tryClaim(Connection c, ClaimRequest request, Duration lockTimeout, boolean inTransaction) {
        return claimRound(c, request, lockTimeout, inTransaction, 0);
    }

    private Mono<ClaimResult> claimRound(Connection c, ClaimRequest request, Duration lockTimeout,
            boolean inTransaction, int round) {
        if (round == CLAIM_ROUNDS) {
            return Mono.just(new ClaimResult.InProgress(Duration.ZERO));
        }
        Statement insert = c.createStatement(claimSql)
                .bind("$1", Long.toString(Math.max(1, lockTimeout.toMillis())))
                .bind("$2", request.key().scope())
                .bind("$3", request.key().value())
                .bind("$4", request.fingerprint().bytes())
                .bind("$5", request.token().value())
                .bind("$6", request.leaseTtl().toMillis())
                .bind("$7", request.retention().toMillis());
        Mono<ClaimResult> claimed = Flux.from(insert.execute())
                .concatMap(result -> result.map(row -> row.get("attempt", Integer.class)))
                .next()
                .map(attempt -> (ClaimResult) new ClaimResult.Claimed(request.token(), attempt));
        if (inTransaction) {
            claimed = claimed.flatMap(result -> Flux.from(c.createStatement(restoreLockTimeoutSql).execute())
                    .concatMap(Result::getRowsUpdated).then(Mono.just(result)));
        }
        return claimed.switchIfEmpty(Mono.defer(() -> decide(c, request))
                .switchIfEmpty(Mono.defer(() -> claimRound(c, request, lockTimeout, inTransaction, round + 1))));
    }

    /** Not claimed: what the record says; empty if it is gone or expired since the insert looked (claim again). */
    private Mono<ClaimResult> decide(Connection c, ClaimRequest request) {
        Statement select = c.createStatement(selectSql)
                .bind("$1", request.key().scope())
                .bind("$2", request.key().value());
        return Flux.from(select.execute())
                .concatMap(result -> result.map(row -> Optional.ofNullable(decision(row, request))))
                .next()
                .flatMap(Mono::justOrEmpty);
    }

    private static ClaimResult decision(Readable row, ClaimRequest request) {
        if (Boolean.TRUE.equals(row.get("expired", Boolean.class))) {
            return null;
        }
        if (!Fingerprint.of(bytes(row, "fingerprint")).matches(request.fingerprint())) {
            return new ClaimResult.FingerprintMismatch();
        }
        RecordStatus status = RecordStatus.valueOf(row.get("status", String.class));
        if (status == RecordStatus.COMPLETED) {
            return new ClaimResult.Replay(response(row).orElseThrow());
        }
        Long leaseMillis = row.get("lease_millis", Long.class);
        if (status == RecordStatus.IN_PROGRESS && leaseMillis != null && leaseMillis > 0) {
            return new ClaimResult.InProgress(Duration.ofMillis(leaseMillis));
        }
        // Released or its lease ran out since the insert looked: claim again.
        return null;
    }

    /** Stores the response if {@code token} holds the key; with {@code held}, the claim's row lock fences it already. */
    Mono<Boolean> complete(Connection c, IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention, boolean held) {
        Statement update = c.createStatement(held ? completeHeldSql : completeSql)
                .bind("$1", retention.toMillis())
                .bind("$2", response.status());
        String headers = HeaderCodec.encode(response.headers());
        if (headers == null) {
            update.bindNull("$3", String.class);
        } else {
            update.bind("$3", headers);
        }
        update.bind("$4", response.body())
                .bind("$5", key.scope())
                .bind("$6", key.value())
                .bind("$7", token.value());
        return updatedOne(update);
    }

    /** Sets the lease to {@code leaseTtl} from now if {@code token} holds the key, in progress and not expired. */
    Mono<Boolean> renewLease(Connection c, IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        return updatedOne(c.createStatement(renewSql)
                .bind("$1", leaseTtl.toMillis())
                .bind("$2", key.scope())
                .bind("$3", key.value())
                .bind("$4", token.value()));
    }

    /** Marks the record FAILED if {@code token} holds the key. */
    Mono<Boolean> release(Connection c, IdempotencyKey key, OwnerToken token) {
        return updatedOne(c.createStatement(releaseSql)
                .bind("$1", key.scope())
                .bind("$2", key.value())
                .bind("$3", token.value()));
    }

    Mono<Optional<IdempotencyRecord>> inspect(Connection c, IdempotencyKey key) {
        Statement select = c.createStatement(inspectSql)
                .bind("$1", key.scope())
                .bind("$2", key.value());
        return Flux.from(select.execute())
                .concatMap(result -> result.map(row -> new IdempotencyRecord(key, Fingerprint.of(bytes(row, "fingerprint")),
                        RecordStatus.valueOf(row.get("status", String.class)), row.get("attempt", Integer.class),
                        row.get("created_at", Instant.class), row.get("lease_expires_at", Instant.class),
                        row.get("completed_at", Instant.class), row.get("expires_at", Instant.class), response(row))))
                .next()
                .map(Optional::of)
                .defaultIfEmpty(Optional.empty());
    }

    /** Deletes at most {@code limit} expired records, oldest first, skipping rows locked by others. */
    Mono<Integer> purgeBatch(Connection c, int limit) {
        return Flux.from(c.createStatement(purgeSql).bind("$1", limit).execute())
                .concatMap(Result::getRowsUpdated)
                .reduce(0L, Long::sum)
                .map(Math::toIntExact);
    }

    private static Mono<Boolean> updatedOne(Statement update) {
        return Flux.from(update.execute())
                .concatMap(Result::getRowsUpdated)
                .reduce(0L, Long::sum)
                .map(n -> n == 1);
    }

    private static Optional<StoredResponse> response(Readable row) {
        Integer status = row.get("response_status", Integer.class);
        if (status == null) {
            return Optional.empty();
        }
        byte[] body = bytes(row, "response_body");
        return Optional.of(StoredResponse.of(status, HeaderCodec.decode(row.get("response_headers", String.class)),
                body == null ? new byte[0] : body));
    }

    private static byte[] bytes(Readable row, String column) {
        ByteBuffer buffer = row.get(column, ByteBuffer.class);
        if (buffer == null) {
            return null;
        }
        byte[] bytes = new byte[buffer.remaining()];
        buffer.get(bytes);
        return bytes;
    }

    /** Whether {@code e} is the database's answer that a lock was not granted within {@code lock_timeout}. */
    static boolean isLockTimeout(Throwable e) {
        return e instanceof R2dbcException r && LOCK_NOT_AVAILABLE.equals(r.getSqlState());
    }
}
