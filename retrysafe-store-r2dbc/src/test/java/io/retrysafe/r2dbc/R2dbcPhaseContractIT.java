package io.retrysafe.r2dbc;

import io.r2dbc.spi.Connection;
import io.retrysafe.spi.AsyncIdempotencyStore;
import io.retrysafe.spi.AsyncPhaseJournal;
import io.retrysafe.tck.AsyncPhaseJournalContract;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;

/**
 * The phase contract on PostgreSQL through R2DBC: the application's write in a step is a row of a table of
 * its own, on the step's connection, in its transaction.
 */
class R2dbcPhaseContractIT extends AsyncPhaseJournalContract<Connection> {
    private static R2dbcIdempotencyStore store;
    private static R2dbcPhaseJournal journal;

    @BeforeAll
    static void createTables() throws Exception {
        store = R2dbcIdempotencyStore.builder(R2dbcDatabase.pool()).table("rs_r2dbc_phase_it").build();
        store.createSchema().toCompletableFuture().get();
        PhaseWrites.createTable();
        journal = R2dbcPhaseJournal.of(store);
    }

    @Override
    protected AsyncIdempotencyStore asyncStore() {
        return store;
    }

    @Override
    protected AsyncPhaseJournal<Connection> asyncJournal() {
        return journal;
    }

    /** On the contract's own thread for step bodies, so it may wait for the insert. */
    @Override
    protected void write(Connection transaction, String marker) {
        PhaseWrites.insert(transaction, marker).block(Duration.ofSeconds(30));
    }

    @Override
    protected long count(String marker) {
        return PhaseWrites.count(marker);
    }
}
