package io.retrysafe.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The transactional store contract on PostgreSQL at its default isolation level, READ COMMITTED. */
class PostgresTransactionalContractIT extends JdbcTransactionalContract {
    private static Opened db;

    @BeforeAll
    static void openDatabase() {
        db = postgres(null, JdbcTransactionalContract::postgresStore);
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
