package io.retrysafe.r2dbc;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.R2dbcNonTransientResourceException;
import io.r2dbc.spi.R2dbcTimeoutException;
import io.r2dbc.spi.R2dbcTransientResourceException;
import io.r2dbc.spi.Result;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.sql.Schema;
import io.retrysafe.sql.TableNames;
import io.retrysafe.sql.TableStoreOptions;
import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The PostgreSQL store over R2DBC: non-blocking, on the table of the JDBC store ({@code JdbcIdempotencyStore}), with
 * its schema and its statements' semantics, so that records either store writes are read, replayed,
 * listed by the CLI and purged by {@code JdbcPurger} alike. Standalone, each call is a statement (or
 * two) on a connection of its own from the {@link ConnectionFactory} (pool it: {@code r2dbc-pool}),
 * committed at once. For the operation's own transaction, see {@link TransactionalR2dbcRetrySafe}.
 *
 * <pre>{@code
 * R2dbcIdempotencyStore store = R2dbcIdempotencyStore.builder(connectionFactory).build();
 * AsyncRetrySafe retrySafe = AsyncRetrySafe.builder(store).build();
 * }</pre>
 *
 * <p>Time is the database's ({@code statement_timestamp()}). A claim waits at most
 * {@link #lockTimeout()} for a transaction that holds its key, then answers in progress. Every
 * failure is a failed stage with {@link StoreUnavailableException}, unreachable when the database
 * could not be reached. Only PostgreSQL's standard layout is supported (not the partitioned one).
 */
public final class R2dbcIdempotencyStore implements AsyncIdempotencyStore {
    private static final Duration RETRY_AFTER = Duration.ofSeconds(1);

    private final ConnectionFactory connections;
    private final String table;
    private final Duration lockTimeout;
    private final String name;
    private final PostgresStatements sql;

    private R2dbcIdempotencyStore(Builder b) {
        this.connections = b.connections;
        this.table = b.options.table();
        this.lockTimeout = b.options.lockTimeout();
        this.name = b.options.nameOr("r2dbc");
        this.sql = new PostgresStatements(table);
    }

    public static Builder builder(ConnectionFactory connections) {
        return new Builder(connections);
    }

    public String table() {
        return table;
    }

    /** How long a claim waits for a transaction holding its key before it answers in progress. */
    public Duration lockTimeout() {
        return lockTimeout;
    }

    ConnectionFactory connections() {
        return connections;
    }

    PostgresStatements sql() {
        return sql;
    }

    /**
     * Creates the table and its index if absent, from the schema file the JDBC store ships (the same
     * DDL as its {@code createSchema()} and its Flyway and Liquibase migrations).
     */
    public CompletionStage<Void> createSchema() {
        String ddl = Schema.POSTGRESQL.forTable(table);
        return call("create the schema", c -> Flux.from(c.createStatement(ddl).execute())
                .concatMap(Result::getRowsUpdated).then());
    }

    @Override
    public CompletionStage<ClaimResult> tryClaim(ClaimRequest request) {
        return call("claim", c -> sql.tryClaim(c, request, lockTimeout, false)
                .onErrorResume(PostgresStatements::isLockTimeout,
                        e -> Mono.just(new ClaimResult.InProgress(lockTimeout))));
    }

    @Override
    public CompletionStage<FencedWrite> complete(IdempotencyKey key, OwnerToken token, StoredResponse response,
            Duration retention) {
        Require.notNull(response, "response");
        return call("complete", c -> sql.complete(c, key, token, response, retention, false).map(R2dbcIdempotencyStore::fenced));
    }

    @Override
    public CompletionStage<FencedWrite> release(IdempotencyKey key, OwnerToken token) {
        return call("release", c -> sql.release(c, key, token).map(R2dbcIdempotencyStore::fenced));
    }

    @Override
    public boolean canRenewLease() {
        return true;
    }

    @Override
    public CompletionStage<FencedWrite> renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        Require.positive(leaseTtl, "leaseTtl");
        return call("renew lease", c -> sql.renewLease(c, key, token, leaseTtl).map(R2dbcIdempotencyStore::fenced));
    }

    @Override
    public CompletionStage<Optional<IdempotencyRecord>> inspect(IdempotencyKey key) {
        return call("inspect", c -> sql.inspect(c, key));
    }

    /** One bounded batch, as one batch of {@code JdbcPurger}: oldest first, rows locked by others skipped. */
    @Override
    public CompletionStage<Integer> purgeExpired(int limit) {
        Require.between(limit, 1, Integer.MAX_VALUE, "limit");
        return call("purge", c -> sql.purgeBatch(c, limit));
    }

    @Override
    public String name() {
        return name;
    }

    static FencedWrite fenced(boolean written) {
        return written ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    /**
     * {@code work} on a connection of its own, closed however it ends; a failure becomes this store's, but for
     * one of the caller's own work inside it ({@link #callers}), which is passed on as it is.
     */
    <R> CompletionStage<R> call(String what, Function<Connection, Mono<R>> work) {
        return Mono.usingWhen(connections.create(), work, Connection::close)
                .onErrorMap(e -> e instanceof CallersFailure callers ? callers.getCause() : failure(what, e))
                .toFuture();
    }

    /** The caller's own work run inside {@link #call} (a phased operation's step): its failure is not the store's. */
    static <R> Mono<R> callers(Mono<R> work) {
        return work.onErrorMap(CallersFailure::new);
    }

    private static final class CallersFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        CallersFailure(Throwable cause) {
            super(null, cause, false, false);
        }
    }

    /** A failure of {@code what} as the engine reports it: unreachable when the database could not be reached. */
    StoreUnavailableException failure(String what, Throwable e) {
        if (e instanceof StoreUnavailableException sue) {
            return sue;
        }
        String state = e instanceof R2dbcException r && r.getSqlState() != null ? " (SQLState " + r.getSqlState() + ")"
                : "";
        return new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name + " failed to " + what
                + " on " + table + ": " + e.getMessage() + state, e, isUnreachable(e));
    }

    /**
     * Whether the database could not be reached, as opposed to answering with an error (a missing
     * table, no permission, bad data): no connection, a resource or connection failure (SQLState
     * class 08), a server shutting down or not accepting connections yet (57P01–57P03), a timeout.
     */
    static boolean isUnreachable(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof R2dbcNonTransientResourceException || t instanceof R2dbcTransientResourceException
                    || t instanceof R2dbcTimeoutException || t instanceof IOException) {
                return true;
            }
            if (t instanceof R2dbcException r && TableNames.isUnreachableState(r.getSqlState())) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return "R2dbcIdempotencyStore[table=" + table + ", lockTimeout=" + lockTimeout + "]";
    }

    /** Builds an {@link R2dbcIdempotencyStore}; each value may be set once. */
    public static final class Builder {
        private final ConnectionFactory connections;
        private final TableStoreOptions options = new TableStoreOptions();

        private Builder(ConnectionFactory connections) {
            this.connections = Require.notNull(connections, "connections");
        }

        /** The table, optionally schema-qualified: letters, digits and underscores only, as it is put into SQL. */
        public Builder table(String table) {
            options.table(table);
            return this;
        }

        /** How long a claim waits for a transaction holding its key before it answers in progress; at least 1 ms. */
        public Builder lockTimeout(Duration lockTimeout) {
            options.lockTimeout(lockTimeout);
            return this;
        }

        /** The store's name in logs, metrics and errors; {@code "r2dbc:" + table} by default. */
        public Builder name(String name) {
            options.name(name);
            return this;
        }

        public R2dbcIdempotencyStore build() {
            return new R2dbcIdempotencyStore(this);
        }
    }
}
