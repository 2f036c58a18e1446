package io.retrysafe.gateway;

import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestRedis;
import java.util.Map;
import java.util.UUID;

/** {@code store:} sections on the test databases, each with a table of its own, created at start. */
final class TestStores {
    /** The environment {@link #postgres}'s {@code password-env} names. */
    static Map<String, String> postgresEnv() {
        return Map.of("TEST_PG_PASSWORD", TestDatabases.postgresPassword());
    }

    /** The environment {@link #mariadb}'s {@code password-env} names. */
    static Map<String, String> mariadbEnv() {
        return Map.of("TEST_MARIADB_PASSWORD", TestDatabases.mariadbPassword());
    }

    private TestStores() {
    }

    static String table() {
        return "gw_it_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    static String postgres(String table) {
        return jdbc("postgresql", TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(), "TEST_PG_PASSWORD", table);
    }

    static String mariadb(String table) {
        return jdbc("mariadb", TestDatabases.mariadbJdbcUrl(), TestDatabases.mariadbUser(), "TEST_MARIADB_PASSWORD",
                table);
    }

    /** The shared standalone Redis, under a key prefix of the caller's own. */
    static String redis(String keyPrefix) {
        return """
                type: redis
                url: %s
                key-prefix: "%s"
                """.formatted(TestRedis.standaloneUri().toURI(), keyPrefix);
    }

    private static String jdbc(String type, String url, String user, String passwordEnv, String table) {
        return """
                type: %s
                url: %s
                username: %s
                password-env: %s
                pool-size: 4
                table: %s
                create-schema: true
                """.formatted(type, url, user, passwordEnv, table);
    }
}
