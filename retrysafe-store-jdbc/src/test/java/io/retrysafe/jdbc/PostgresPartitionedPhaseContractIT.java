package io.retrysafe.jdbc;

import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.BeforeAll;

/** The phase contract on PostgreSQL, the table partitioned by expiry day. */
class PostgresPartitionedPhaseContractIT extends JdbcPhaseJournalContract {
    private static JdbcPhaseJournal journal;

    @BeforeAll
    static void createTables() {
        journal = prepare(JdbcIdempotencyStore.builder(TestDatabases.postgres()).dialect(JdbcDialect.POSTGRESQL)
                .layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY).table("rs_pgp_phase_it").build());
    }

    @Override
    protected JdbcPhaseJournal jdbcJournal() {
        return journal;
    }
}
