package io.retrysafe.r2dbc;

import io.r2dbc.spi.Connection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.AsyncPhaseJournal;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

/**
 * Phased operations on an {@link R2dbcIdempotencyStore}, without blocking: each local step runs in a
 * transaction on a connection of the store's {@code ConnectionFactory} (the application's database), which
 * also saves the step's state in the key's record, fenced by the owner token, and commits both or neither.
 * The statements and the saved state are the JDBC store's ({@code JdbcPhaseJournal}): either store resumes,
 * lists and completes what the other saved, and their completers share one lock per table.
 *
 * <pre>{@code
 * AsyncPhasedRetrySafe<Connection> phased = AsyncPhasedRetrySafe.builder(retrySafe, R2dbcPhaseJournal.of(store)).build();
 * }</pre>
 */
public final class R2dbcPhaseJournal implements AsyncPhaseJournal<Connection> {
    private static final System.Logger LOG = System.getLogger(R2dbcPhaseJournal.class.getName());

    private final R2dbcIdempotencyStore store;

    private R2dbcPhaseJournal(R2dbcIdempotencyStore store) {
        this.store = store;
    }

    public static R2dbcPhaseJournal of(R2dbcIdempotencyStore store) {
        return new R2dbcPhaseJournal(Require.notNull(store, "store"));
    }

    public R2dbcIdempotencyStore store() {
        return store;
    }

    @Override
    public String name() {
        return store.name();
    }

    @Override
    public CompletionStage<Optional<byte[]>> read(IdempotencyKey key, OwnerToken token) {
        return store.call("read saved steps", c -> store.sql().readPhase(c, key, token));
    }

    @Override
    public CompletionStage<FencedWrite> advance(IdempotencyKey key, OwnerToken token, Duration leaseTtl,
            StepWork<Connection> work) {
        Require.positive(leaseTtl, "leaseTtl");
        Require.notNull(work, "work");
        return store.call("run a step", c -> Mono.from(c.beginTransaction())
                .then(R2dbcIdempotencyStore.callers(Mono.defer(() -> state(work, c))))
                .flatMap(state -> store.sql().advancePhase(c, key, token, state, leaseTtl))
                // A commit that fails leaves the step either wholly done or not at all, with its state: the
                // attempt that resumes reads which, so the failure is reported as it is.
                .flatMap(written -> Mono.from(written ? c.commitTransaction() : c.rollbackTransaction())
                        .then(Mono.just(R2dbcIdempotencyStore.fenced(written))))
                .onErrorResume(e -> rollbackQuietly(c, key).then(Mono.error(e))));
    }

    private static Mono<byte[]> state(StepWork<Connection> work, Connection c) {
        try {
            return Mono.fromCompletionStage(Require.notNull(work.run(c), "the step's stage"))
                    .switchIfEmpty(Mono.error(() -> new NullPointerException("the step's state must not be null")));
        } catch (Exception e) {
            return Mono.error(e);
        }
    }

    private Mono<Void> rollbackQuietly(Connection c, IdempotencyKey key) {
        return Mono.from(c.rollbackTransaction()).onErrorResume(e -> {
            LOG.log(Level.WARNING, () -> "[" + store.name() + "] could not roll back a step of key " + key.digest()
                    + "; closing its connection ends the transaction: " + e);
            return Mono.empty();
        });
    }

    @Override
    public CompletionStage<List<PhaseJournal.Abandoned>> abandoned(Duration idleFor, int limit) {
        Require.notNegative(idleFor, "idleFor");
        Require.between(limit, 1, Integer.MAX_VALUE, "limit");
        return store.call("find abandoned operations", c -> store.sql().abandonedPhases(c, idleFor, limit));
    }

    @Override
    public CompletionStage<Long> countAbandoned(Duration idleFor) {
        Require.notNegative(idleFor, "idleFor");
        return store.call("count abandoned operations", c -> store.sql().countAbandonedPhases(c, idleFor));
    }

    /** A session-level advisory lock, named as {@code JdbcPhaseJournal} names it, held on its connection until the work ends. */
    @Override
    public <R> CompletionStage<Optional<R>> exclusively(String name, Supplier<? extends CompletionStage<R>> work) {
        Require.notBlank(name, "name");
        Require.notNull(work, "work");
        String lock = name + ":" + store.table();
        return store.call("take lock " + lock, c -> store.sql().tryLock(c, lock).flatMap(locked -> !locked
                ? Mono.just(Optional.<R>empty())
                : Mono.usingWhen(Mono.just(c),
                        held -> R2dbcIdempotencyStore.callers(Mono.<R>fromCompletionStage(work)
                                .map(Optional::of).defaultIfEmpty(Optional.empty())),
                        held -> store.sql().unlock(held, lock))));
    }

    @Override
    public String toString() {
        return "R2dbcPhaseJournal[" + store + "]";
    }
}
