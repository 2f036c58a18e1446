package io.retrysafe.tck;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.AsyncPhaseJournal;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * An asynchronous phase journal seen through the blocking SPI, as {@link BlockingView} sees an asynchronous
 * store, so that the phase contract runs against it unchanged. The contract's step bodies and exclusive work
 * block (they write through the transaction and wait for latches), so they run on threads of this view's
 * own, never on the store's event loop, which must not wait.
 */
final class BlockingPhaseView<C> implements PhaseJournal<C> {
    /** Threads for the contract's blocking bodies; daemons, so that a test run ends without closing them. */
    private static final ExecutorService BODIES = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "phase-view-body");
        t.setDaemon(true);
        return t;
    });

    private final AsyncPhaseJournal<C> journal;

    BlockingPhaseView(AsyncPhaseJournal<C> journal) {
        this.journal = journal;
    }

    @Override
    public Optional<byte[]> read(IdempotencyKey key, OwnerToken token) {
        return BlockingView.await("read", journal.read(key, token));
    }

    @Override
    public FencedWrite advance(IdempotencyKey key, OwnerToken token, Duration leaseTtl, StepWork<C> work) {
        return BlockingView.await("advance", journal.advance(key, token, leaseTtl,
                transaction -> CompletableFuture.supplyAsync(() -> {
                    try {
                        return work.run(transaction);
                    } catch (RuntimeException e) {
                        throw e;
                    } catch (Exception e) {
                        throw new CompletionException(e);
                    }
                }, BODIES)));
    }

    @Override
    public List<Abandoned> abandoned(Duration idleFor, int limit) {
        return BlockingView.await("abandoned", journal.abandoned(idleFor, limit));
    }

    @Override
    public long countAbandoned(Duration idleFor) {
        return BlockingView.await("countAbandoned", journal.countAbandoned(idleFor));
    }

    @Override
    public <R> Optional<R> exclusively(String name, Supplier<R> work) {
        return BlockingView.await("exclusively", journal.exclusively(name, () -> CompletableFuture.supplyAsync(work,
                BODIES)));
    }

    @Override
    public String name() {
        return journal.name();
    }
}
