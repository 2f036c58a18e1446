package io.retrysafe.testservices;

import static io.retrysafe.testservices.SharedService.env;
import static io.retrysafe.testservices.SharedService.isCi;
import static io.retrysafe.testservices.SharedService.log;
import static io.retrysafe.testservices.SharedService.unavailable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import javax.sql.DataSource;

/**
  * Databases for RetrySafe's own tests, one of each per JVM.
  *
  * <p>PostgreSQL comes from {@code RETRYSAFE_PG_URL} / {@code RETRYSAFE_PG_USER} /
  * {@code RETRYSAFE_PG_PASSWORD} (default {@code jdbc:postgresql://127.0.0.1:5432/test}, user
  * {@code postgres}, no password). If that server does not answer, an embedded PostgreSQL is
  * started instead, so a machine with only a JDK can run the suite.
  *
  * <p>MariaDB comes from {@code RETRYSAFE_MARIADB_URL} / {@code RETRYSAFE_MARIADB_USER} /
  * {@code RETRYSAFE_MARIADB_PASSWORD} (default {@code jdbc:mariadb://127.0.0.1:3306/test}, user
  * {@code root}, no password). There is no embedded fallback: if it does not answer, the calling
  * test is aborted (reported as skipped) - unless {@code CI=true}, where services are mandatory and
  * the test fails.
  *
  * <p>Pools hold at most {@value #DEFAULT_POOL_SIZE} connections; override with env
  * {@code RETRYSAFE_TEST_POOL_SIZE} or system property {@code retrysafe.test.poolSize}.
  *
  * <p>The {@code *JdbcUrl()}, {@code *User()} and {@code *Password()} accessors describe the
  * database actually in use (the embedded one included), so a child JVM can be pointed at it.
  */
public final class TestDatabases {

    static final int DEFAULT_POOL_SIZE = 20;

    // A missing server refuses at once; the bound is for one that is slow to answer on a loaded machine.
    private static final int PROBE_TIMEOUT_SECONDS = 10;

    private static final Object LOCK = new Object();

    // All guarded by LOCK. A probe result (success or failure) is kept for the JVM's lifetime.
    private static Endpoint postgresEndpoint;
    private static RuntimeException postgresFailure;
    private static HikariDataSource postgresPool;
    private static EmbeddedPostgres embeddedPostgres;
    private static Endpoint mariadbEndpoint;
    private static String mariadbFailure;
    private static HikariDataSource mariadbPool;
    private static boolean shutdownHookInstalled;

    private TestDatabases() {}

    // ---------------------------------------------------------------- PostgreSQL

    /** A pooled PostgreSQL data source: the configured server, or an embedded one if it is down. */
    public static DataSource postgres() {
        synchronized (LOCK) {
            if (postgresPool == null) {
                postgresPool = pool("retrysafe-test-postgres", postgresEndpoint());
            }
            return postgresPool;
        }
    }

    /** JDBC URL of the PostgreSQL database that {@link #postgres()} uses. */
    public static String postgresJdbcUrl() {
        return postgresEndpoint().url();
    }

    public static String postgresUser() {
        return postgresEndpoint().user();
    }

    public static String postgresPassword() {
        return postgresEndpoint().password();
    }

    private static Endpoint postgresEndpoint() {
        synchronized (LOCK) {
            if (postgresEndpoint == null && postgresFailure == null) {
                try {
                    postgresEndpoint = resolvePostgres();
                } catch (RuntimeException e) {
                    postgresFailure = e; // probe once per JVM, even when it fails
                }
            }
            if (postgresFailure != null) {
                throw new IllegalStateException(postgresFailure.getMessage(), postgresFailure);
            }
            return postgresEndpoint;
        }
    }

    private static Endpoint resolvePostgres() {
        Endpoint configured =
                new Endpoint(
                        env("RETRYSAFE_PG_URL", "jdbc:postgresql://127.0.0.1:5432/test"),
                        env("RETRYSAFE_PG_USER", "postgres"),
                        env("RETRYSAFE_PG_PASSWORD", ""));
        Properties timeouts = new Properties();
        // pgjdbc takes both in seconds; parameters in the URL itself still win.
        timeouts.setProperty("connectTimeout", Integer.toString(PROBE_TIMEOUT_SECONDS));
        timeouts.setProperty("loginTimeout", Integer.toString(PROBE_TIMEOUT_SECONDS));
        String failure = probe(configured, timeouts);
        if (failure == null) {
            log("PostgreSQL: using " + configured.url() + " (reachable)");
            return configured;
        }
        return startEmbeddedPostgres(configured.url(), failure);
    }

    private static Endpoint startEmbeddedPostgres(String configuredUrl, String failure) {
        try {
            EmbeddedPostgres pg =
                    EmbeddedPostgres.builder()
                            .setServerConfig("listen_addresses", "127.0.0.1")
                            // Cold starts on a small, busy machine can exceed the 10 s default.
                            .setPGStartupWait(Duration.ofSeconds(60))
                            .setRegisterShutdownHook(false) // ours closes the pools first, then the server
                            .start();
            embeddedPostgres = pg;
            installShutdownHook();
            Endpoint admin =
                    new Endpoint("jdbc:postgresql://127.0.0.1:" + pg.getPort() + "/postgres", "postgres", "");
            // Mirror the usual server layout so URLs differ only in the port.
            try (Connection c = DriverManager.getConnection(admin.url(), admin.user(), admin.password());
                    Statement s = c.createStatement()) {
                s.execute("create database test");
            }
            Endpoint embedded =
                    new Endpoint("jdbc:postgresql://127.0.0.1:" + pg.getPort() + "/test", "postgres", "");
            log("PostgreSQL: " + configuredUrl + " not reachable (" + failure
                    + "); using embedded PostgreSQL at " + embedded.url());
            return embedded;
        } catch (IOException | SQLException | RuntimeException e) {
            throw new IllegalStateException(
                    "PostgreSQL not reachable at " + configuredUrl + ": " + failure
                            + "; starting the embedded fallback failed too: " + e,
                    e);
        }
    }

    // ---------------------------------------------------------------- MariaDB

    /**
      * A pooled MariaDB data source. If the server does not answer, aborts the calling test (so it is
      * reported as skipped), or fails it when {@code CI=true}.
      */
    public static DataSource mariadb() {
        synchronized (LOCK) {
            if (mariadbPool == null) {
                mariadbPool = pool("retrysafe-test-mariadb", mariadbEndpoint());
            }
            return mariadbPool;
        }
    }

    /** JDBC URL of the MariaDB database that {@link #mariadb()} uses; same skip rule. */
    public static String mariadbJdbcUrl() {
        return mariadbEndpoint().url();
    }

    public static String mariadbUser() {
        return mariadbEndpoint().user();
    }

    public static String mariadbPassword() {
        return mariadbEndpoint().password();
    }

    private static Endpoint mariadbEndpoint() {
        Endpoint endpoint;
        String failure;
        synchronized (LOCK) {
            if (mariadbEndpoint == null && mariadbFailure == null) {
                Endpoint configured =
                        new Endpoint(
                                env("RETRYSAFE_MARIADB_URL", "jdbc:mariadb://127.0.0.1:3306/test"),
                                env("RETRYSAFE_MARIADB_USER", "root"),
                                env("RETRYSAFE_MARIADB_PASSWORD", ""));
                Properties timeouts = new Properties();
                // MariaDB Connector/J takes milliseconds.
                timeouts.setProperty("connectTimeout", Integer.toString(PROBE_TIMEOUT_SECONDS * 1000));
                String problem = probe(configured, timeouts);
                if (problem == null) {
                    log("MariaDB: using " + configured.url() + " (reachable)");
                    mariadbEndpoint = configured;
                } else {
                    mariadbFailure =
                            "MariaDB not reachable at " + configured.url() + ": " + problem
                                    + "; set RETRYSAFE_MARIADB_URL";
                    log(mariadbFailure + (isCi() ? " (CI=true: failing)" : " (skipping its tests)"));
                }
            }
            endpoint = mariadbEndpoint;
            failure = mariadbFailure;
        }
        if (endpoint != null) {
            return endpoint;
        }
        return unavailable(failure);
    }

    // ---------------------------------------------------------------- helpers

    /** Returns null if the database answers {@code select 1}, else a one-line reason. */
    private static String probe(Endpoint endpoint, Properties timeouts) {
        Properties props = new Properties();
        props.putAll(timeouts);
        props.setProperty("user", endpoint.user());
        props.setProperty("password", endpoint.password());
        try (Connection c = DriverManager.getConnection(endpoint.url(), props);
                Statement s = c.createStatement()) {
            s.setQueryTimeout(PROBE_TIMEOUT_SECONDS);
            s.execute("select 1");
            return null;
        } catch (SQLException | RuntimeException e) {
            String message = e.getMessage();
            return e.getClass().getSimpleName() + (message == null ? "" : ": " + message.strip());
        }
    }

    private static HikariDataSource pool(String name, Endpoint endpoint) {
        HikariConfig config = new HikariConfig();
        config.setPoolName(name);
        config.setJdbcUrl(endpoint.url());
        config.setUsername(endpoint.user());
        config.setPassword(endpoint.password());
        int max = poolSize();
        config.setMaximumPoolSize(max);
        config.setMinimumIdle(Math.min(2, max)); // grow on demand; most tests need few connections
        config.setConnectionTimeout(Duration.ofSeconds(10).toMillis());
        HikariDataSource ds = new HikariDataSource(config);
        installShutdownHook();
        return ds;
    }

    private static int poolSize() {
        String raw = System.getProperty("retrysafe.test.poolSize", env("RETRYSAFE_TEST_POOL_SIZE", ""));
        if (raw.isBlank()) {
            return DEFAULT_POOL_SIZE;
        }
        try {
            int size = Integer.parseInt(raw.strip());
            if (size > 0) {
                return size;
            }
        } catch (NumberFormatException ignored) {
            // fall through to the error below
        }
        throw new IllegalArgumentException(
                "Test pool size must be a positive integer, got '" + raw
                        + "' (RETRYSAFE_TEST_POOL_SIZE / retrysafe.test.poolSize)");
    }

    // Caller holds LOCK.
    private static void installShutdownHook() {
        if (shutdownHookInstalled) {
            return;
        }
        shutdownHookInstalled = true;
        Runtime.getRuntime()
                .addShutdownHook(new Thread(TestDatabases::closeAll, "retrysafe-test-databases-shutdown"));
    }

    private static void closeAll() {
        synchronized (LOCK) {
            // Pools first, so the embedded server does not see connections vanish mid-shutdown.
            if (postgresPool != null) {
                postgresPool.close();
            }
            if (mariadbPool != null) {
                mariadbPool.close();
            }
            if (embeddedPostgres != null) {
                try {
                    embeddedPostgres.close();
                } catch (IOException e) {
                    log("stopping embedded PostgreSQL failed: " + e);
                }
            }
        }
    }


    private record Endpoint(String url, String user, String password) {}
}
