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
import io.retrysafe.spi.ClaimDecision;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FoundRecord;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
import io.retrysafe.sql.TableNames;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The JDBC store's PostgreSQL statements on one R2DBC connection, for the same table: the same
 * claim ({@code INSERT … ON CONFLICT DO UPDATE … WHERE}), the same fencing by owner token, the same
 * clock ({@code statement_timestamp()}), the same purge. Each method is one atomic step and leaves
 * transaction control to its caller.
 *
 * <p>The texts are the JDBC store's, written once in {@link PostgresSqlText}, with R2DBC's numbered
 * bind markers, each cast to its parameter's type ({@code $1::text, $2::varchar, …}). R2DBC runs one statement at a time, so the claim is
 * {@link PostgresSqlText#claimStatement()}: the lock bound is set by a sub-select the insert reads its
 * row from, so that it is in force before the insert can wait on the key; in a transaction, the
 * bound is put back by a statement of its own right after it.
 */
final class PostgresStatements {
    /** A claim that finds the record changing under it (purged, expired, released) tries again this often. */
    private static final int CLAIM_ROUNDS = 3;
    /** The columns of {@link PostgresSqlText#select()} read by place (from 0): they have no name of their own. */
    private static final int LEASE_MILLIS = 5;
    private static final int EXPIRED = 6;

    private final String claimSql;
    private final String selectSql;
    private final String completeSql;
    private final String completeHeldSql;
    private final String releaseSql;
    private final String renewSql;
    private final String inspectSql;
    private final String purgeSql;
    private final String advancePhaseSql;
    private final String readPhaseSql;
    private final String abandonedPhasesSql;
    private final String countAbandonedPhasesSql;

    PostgresStatements(String table) {
        PostgresSqlText text = new PostgresSqlText(table, BindMarkers.NUMBERED);
        // set_config(…, true) is SET LOCAL: in a statement of its own (standalone) it ends with it; in
        // a transaction, RESTORE_LOCK_TIMEOUT puts the saved value back right after the claim.
        claimSql = text.claimStatement();
        selectSql = text.select();
        completeSql = text.complete(true);
        // In the claim's own transaction the row is locked since the claim, so the token alone fences it.
        completeHeldSql = text.complete(false);
        renewSql = text.renewLease();
        releaseSql = text.release();
        inspectSql = text.inspect();
        purgeSql = text.purge();
        advancePhaseSql = text.advancePhase();
        readPhaseSql = text.readPhase();
        abandonedPhasesSql = text.abandonedPhases();
        countAbandonedPhasesSql = text.countAbandonedPhases();
    }

    /**
     * The atomic insert-if-absent or takeover, then, if it did not claim, the decision from the
     * record as committed. Waits at most {@code lockTimeout} for a transaction holding the key; past
     * it, fails with SQLState {@link PostgresSqlText#LOCK_NOT_AVAILABLE} (the caller answers in
     * progress, and undoes what the database aborted). With {@code inTransaction}, the lock bound is
     * put back after a claim.
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
                .bind("$1", request.key().scope())
                .bind("$2", request.key().value())
                .bind("$3", request.fingerprint().bytes())
                .bind("$4", request.token().value())
                .bind("$5", request.leaseTtl().toMillis())
                .bind("$6", request.retention().toMillis())
                .bind("$7", PostgresSqlText.lockTimeout(lockTimeout));
        Mono<ClaimResult> claimed = Flux.from(insert.execute())
                .concatMap(result -> result.map(row -> row.get("attempt", Integer.class)))
                .next()
                .map(attempt -> (ClaimResult) new ClaimResult.Claimed(request.token(), attempt));
        if (inTransaction) {
            claimed = claimed.flatMap(result -> Flux.from(
                    c.createStatement(PostgresSqlText.RESTORE_LOCK_TIMEOUT).execute())
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

    /**
     * The answer of {@link ClaimDecision}, the one decision of every store, from the record read; null
     * when it would take the record over, which the claim did not do because the record changed since
     * it looked (expired, released, its lease ran out): claim again.
     */
    private static ClaimResult decision(Readable row, ClaimRequest request) {
        Long leaseMillis = row.get(LEASE_MILLIS, Long.class);
        FoundRecord found = new FoundRecord(Fingerprint.of(bytes(row, "fingerprint")),
                RecordStatus.valueOf(row.get("status", String.class)),
                Boolean.TRUE.equals(row.get(EXPIRED, Boolean.class)),
                Duration.ofMillis(leaseMillis == null ? 0 : leaseMillis), response(row).orElse(null));
        return ClaimDecision.of(request.fingerprint(), found) instanceof ClaimDecision.Answer answer ? answer.result()
                : null;
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

    /**
     * Saves a local step's {@code state} with the key and sets its lease to {@code leaseTtl} from now, if
     * {@code token} holds it (in progress, not expired); in the step's transaction on {@code c}. True if it wrote.
     */
    Mono<Boolean> advancePhase(Connection c, IdempotencyKey key, OwnerToken token, byte[] state, Duration leaseTtl) {
        return updatedOne(c.createStatement(advancePhaseSql)
                .bind("$1", state)
                .bind("$2", leaseTtl.toMillis())
                .bind("$3", key.scope())
                .bind("$4", key.value())
                .bind("$5", token.value()));
    }

    /** The key's saved state of this life, if {@code token} holds it and there is one. */
    Mono<Optional<byte[]>> readPhase(Connection c, IdempotencyKey key, OwnerToken token) {
        Statement select = c.createStatement(readPhaseSql)
                .bind("$1", key.scope())
                .bind("$2", key.value())
                .bind("$3", token.value());
        return Flux.from(select.execute())
                .concatMap(result -> result.map(row -> Optional.ofNullable(bytes(row.get(0, ByteBuffer.class)))))
                .next()
                .defaultIfEmpty(Optional.empty());
    }

    /** Up to {@code limit} operations nobody holds, untouched for {@code idleFor}, oldest first. */
    Mono<List<PhaseJournal.Abandoned>> abandonedPhases(Connection c, Duration idleFor, int limit) {
        Statement select = c.createStatement(abandonedPhasesSql)
                .bind("$1", idleFor.toMillis())
                .bind("$2", limit);
        return Flux.from(select.execute())
                .concatMap(result -> result.map(row -> new PhaseJournal.Abandoned(
                        IdempotencyKey.of(row.get("scope", String.class), row.get("idem_key", String.class)),
                        Fingerprint.of(bytes(row, "fingerprint")))))
                .collectList();
    }

    Mono<Long> countAbandonedPhases(Connection c, Duration idleFor) {
        return Flux.from(c.createStatement(countAbandonedPhasesSql).bind("$1", idleFor.toMillis()).execute())
                .concatMap(result -> result.map(row -> row.get(0, Long.class)))
                .next();
    }

    /** Takes the session-level advisory lock named {@code name} on {@code c} if it is free. */
    Mono<Boolean> tryLock(Connection c, String name) {
        return Flux.from(c.createStatement(PostgresSqlText.tryAdvisoryLock(BindMarkers.NUMBERED))
                        .bind("$1", PostgresSqlText.lockId(name)).execute())
                .concatMap(result -> result.map(row -> Boolean.TRUE.equals(row.get(0, Boolean.class))))
                .next();
    }

    Mono<Void> unlock(Connection c, String name) {
        return Flux.from(c.createStatement(PostgresSqlText.advisoryUnlock(BindMarkers.NUMBERED))
                        .bind("$1", PostgresSqlText.lockId(name)).execute())
                .concatMap(result -> result.map(row -> row.get(0, Boolean.class)))
                .then();
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
        return bytes(row.get(column, ByteBuffer.class));
    }

    private static byte[] bytes(ByteBuffer buffer) {
        if (buffer == null) {
            return null;
        }
        byte[] bytes = new byte[buffer.remaining()];
        buffer.get(bytes);
        return bytes;
    }

    /** Whether the database rolled {@code e}'s transaction back so that it may be run again ({@link TableNames#isRollbackState}). */
    static boolean mustRunAgain(Throwable e) {
        return e instanceof R2dbcException r && TableNames.isRollbackState(r.getSqlState());
    }

    /** Whether {@code e} is the database's answer that a lock was not granted within {@code lock_timeout}. */
    static boolean isLockTimeout(Throwable e) {
        return e instanceof R2dbcException r && PostgresSqlText.LOCK_NOT_AVAILABLE.equals(r.getSqlState());
    }
}
