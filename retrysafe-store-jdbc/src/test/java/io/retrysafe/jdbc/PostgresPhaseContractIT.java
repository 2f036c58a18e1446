package io.retrysafe.jdbc;

import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.BeforeAll;

/** The phase contract on PostgreSQL. */
class PostgresPhaseContractIT extends JdbcPhaseJournalContract {
    private static JdbcPhaseJournal journal;

    @BeforeAll
    static void createTables() {
        journal = prepare(JdbcIdempotencyStore.builder(TestDatabases.postgres()).dialect(JdbcDialect.POSTGRESQL)
                .layout(JdbcLayout.STANDARD).table("rs_pg_phase_it").build());
    }

    @Override
    protected JdbcPhaseJournal jdbcJournal() {
        return journal;
    }
}
