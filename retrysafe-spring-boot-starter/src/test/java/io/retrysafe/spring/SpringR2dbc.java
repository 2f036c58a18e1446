package io.retrysafe.spring;

import io.retrysafe.testservices.TestDatabases;
import java.net.URI;

/** The test PostgreSQL (the JDBC tests' database) as a reactive application's {@code spring.r2dbc.*}. */
final class SpringR2dbc {
    private SpringR2dbc() {
    }

    /** {@code spring.r2dbc.url}, username and password, as property values. */
    static String[] properties() {
        URI url = URI.create(TestDatabases.postgresJdbcUrl().substring("jdbc:".length()));
        String r2dbc = "r2dbc:postgresql://" + url.getHost() + ":" + (url.getPort() < 0 ? 5432 : url.getPort())
                + url.getPath();
        String password = TestDatabases.postgresPassword();
        return new String[] {"spring.r2dbc.url=" + r2dbc, "spring.r2dbc.username=" + TestDatabases.postgresUser(),
                "spring.r2dbc.password=" + (password == null ? "" : password),
                // The database server is shared: a few connections are plenty.
                "spring.r2dbc.pool.initial-size=0", "spring.r2dbc.pool.max-size=4"};
    }
}
