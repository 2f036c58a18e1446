package io.retrysafe.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The transactional store contract on MariaDB with the application's transactions at SERIALIZABLE, where
 * InnoDB's plain reads lock what they read.
 */
class MariaDbSerializableContractIT extends JdbcTransactionalContract {
    private static Opened db;

    @BeforeAll
    static void openDatabase() {
        db = mariadb("TRANSACTION_SERIALIZABLE", JdbcTransactionalContract::mariadbStore);
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
