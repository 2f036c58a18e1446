package io.retrysafe.r2dbc;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.Result;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The application's own writes in the phase tests: a row per marker, written in a step's transaction. */
final class PhaseWrites {
    static final String TABLE = "rs_r2dbc_phase_writes_it";
    private static final Duration BOUND = Duration.ofSeconds(30);

    private PhaseWrites() {
    }

    static void createTable() {
        Mono.usingWhen(R2dbcDatabase.pool().create(), c -> Flux.from(c.createStatement(
                        "CREATE TABLE IF NOT EXISTS " + TABLE + " (marker varchar(100) NOT NULL)").execute())
                .concatMap(Result::getRowsUpdated).then(), Connection::close).block(BOUND);
    }

    /** Writes {@code marker} on {@code transaction}, without blocking. */
    static Mono<Void> insert(Connection transaction, String marker) {
        return Flux.from(transaction.createStatement("INSERT INTO " + TABLE + " (marker) VALUES ($1)")
                        .bind("$1", marker).execute())
                .concatMap(Result::getRowsUpdated).then();
    }

    /** How many committed writes of {@code marker} there are; waits, on the caller's thread. */
    static long count(String marker) {
        return Mono.usingWhen(R2dbcDatabase.pool().create(),
                c -> Flux.from(c.createStatement("SELECT count(*) FROM " + TABLE + " WHERE marker = $1")
                                .bind("$1", marker).execute())
                        .concatMap(result -> result.map(row -> row.get(0, Long.class))).next(),
                Connection::close).block(BOUND);
    }
}
