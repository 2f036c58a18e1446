package io.retrysafe.testservices;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class TestDatabasesIT {

    @Test
    void postgresAnswersSelectOne() throws SQLException {
        assertSelectOne(TestDatabases.postgres());
    }

    @Test
    void postgresAccessorsReachTheSameDatabaseWithoutThePool() throws SQLException {
        // What a child JVM would do with the accessors.
        try (Connection c =
                DriverManager.getConnection(
                        TestDatabases.postgresJdbcUrl(),
                        TestDatabases.postgresUser(),
                        TestDatabases.postgresPassword())) {
            assertSelectOne(c);
        }
    }

    @Test
    void mariadbAnswersSelectOne() throws SQLException {
        // Skipped with a reason when MariaDB is down, failed instead when CI=true.
        assertSelectOne(TestDatabases.mariadb());
    }

    @Test
    void mariadbAccessorsReachTheSameDatabaseWithoutThePool() throws SQLException {
        try (Connection c =
                DriverManager.getConnection(
                        TestDatabases.mariadbJdbcUrl(),
                        TestDatabases.mariadbUser(),
                        TestDatabases.mariadbPassword())) {
            assertSelectOne(c);
        }
    }

    private static void assertSelectOne(DataSource dataSource) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            assertSelectOne(c);
        }
    }

    private static void assertSelectOne(Connection c) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("select 1")) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getInt(1)).isEqualTo(1);
        }
    }
}
