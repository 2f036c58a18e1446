package io.retrysafe.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The transactional store contract on MariaDB at its default isolation level, REPEATABLE READ. */
class MariaDbTransactionalContractIT extends JdbcTransactionalContract {
    private static Opened db;

    @BeforeAll
    static void openDatabase() {
        db = mariadb(null, JdbcTransactionalContract::mariadbStore);
    }

    @AfterAll
    static void closeDatabase() {
        if (db != null) {
            db.close();
        }
    }

    @Override
    protected Opened opened() {
        return db;
    }
}
