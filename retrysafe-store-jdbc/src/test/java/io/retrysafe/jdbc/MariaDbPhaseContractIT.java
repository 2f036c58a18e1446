package io.retrysafe.jdbc;

import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.BeforeAll;

/** The phase contract on MariaDB. */
class MariaDbPhaseContractIT extends JdbcPhaseJournalContract {
    private static JdbcPhaseJournal journal;

    @BeforeAll
    static void createTables() {
        journal = prepare(JdbcIdempotencyStore.builder(TestDatabases.mariadb()).dialect(JdbcDialect.MARIADB)
                .layout(JdbcLayout.STANDARD).table("rs_maria_phase_it").build());
    }

    @Override
    protected JdbcPhaseJournal jdbcJournal() {
        return journal;
    }
}
