package io.retrysafe.spring;

import io.retrysafe.testservices.TestDatabases;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

// The pool is closed with the context after the class: the database server is shared.
@DirtiesContext
@SpringBootTest(classes = JoinedClaimContract.App.class, webEnvironment = SpringBootTest.WebEnvironment.NONE)
class JoinedClaimPostgresIT extends JoinedClaimContract {

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        properties(registry, TestDatabases::postgresJdbcUrl, TestDatabases::postgresUser, TestDatabases::postgresPassword, "200ms");
    }

    @BeforeAll
    static void createTable() throws Exception {
        TestApps.sql(TestDatabases.postgres(), "CREATE TABLE " + AUDIT + " (note varchar(200) NOT NULL)");
    }

    @AfterAll
    static void dropTables() throws Exception {
        TestApps.sql(TestDatabases.postgres(), "DROP TABLE IF EXISTS " + AUDIT, "DROP TABLE IF EXISTS " + RECORDS);
    }
}
