package io.retrysafe.tck;

import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.AsyncPhaseJournal;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.PhaseJournal;

/**
 * The contract of an {@link AsyncPhaseJournal}: every test of {@link PhaseJournalContract}, each call made
 * through the asynchronous store and journal and awaited on the test's thread. The steps' bodies
 * ({@link #write}) run on threads of the contract's own, where they may block on the transaction they are given.
 *
 * <pre>{@code
 * class R2dbcPhaseContractIT extends AsyncPhaseJournalContract<Connection> {
 *     protected AsyncIdempotencyStore asyncStore() { return store; }
 *     protected AsyncPhaseJournal<Connection> asyncJournal() { return journal; }
 *     ...
 * }
 * }</pre>
 *
 * @param <C> what the journal's local steps are given to reach their transaction
 */
public abstract class AsyncPhaseJournalContract<C> extends PhaseJournalContract<C> {

    /** The asynchronous store under test, standalone; may be the same instance for every test. */
    protected abstract AsyncIdempotencyStore asyncStore();

    /** The journal of {@link #asyncStore()}. */
    protected abstract AsyncPhaseJournal<C> asyncJournal();

    @Override
    protected final IdempotencyStore store() {
        return new BlockingView(asyncStore());
    }

    @Override
    protected final PhaseJournal<C> journal() {
        return new BlockingPhaseView<>(asyncJournal());
    }
}
