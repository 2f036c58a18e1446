package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcAdmin;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Locale;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A connected records table: the store (with its dialect detected once) and its admin API. */
final class Database {
    final ConnectionOptions.Settings settings;
    final JdbcDialect dialect;
    final JdbcLayout layout;
    final JdbcIdempotencyStore store;
    final JdbcAdmin admin;

    private Database(ConnectionOptions.Settings settings, JdbcDialect dialect, JdbcIdempotencyStore store) {
        this.settings = settings;
        this.dialect = dialect;
        this.layout = store.layout();
        this.store = store;
        this.admin = JdbcAdmin.of(store);
    }

    /**
     * Checks the settings, connects once to detect the database and the table's layout (partitioned
     * or not), and builds the store. Bad settings are usage errors (exit 2); a database that does not
     * answer is exit 3.
     */
    static Database open(ConnectionOptions.Settings s) {
        return open(s, null);
    }

    /** As {@link #open(ConnectionOptions.Settings)}, with the layout given for a table that does not exist yet. */
    static Database open(ConnectionOptions.Settings s, JdbcLayout wanted) {
        if (s.url() == null) {
            throw new CliException(Exit.USAGE,
                    "no database: pass --url or set " + ConnectionOptions.ENV_URL + " (jdbc:postgresql://… or jdbc:mariadb://…)");
        }
        String lower = s.url().toLowerCase(Locale.ROOT);
        if (!lower.startsWith("jdbc:postgresql:") && !lower.startsWith("jdbc:mariadb:")) {
            throw new CliException(Exit.USAGE, "--url must be a jdbc:postgresql: or jdbc:mariadb: URL, but was "
                    + Redactor.url(s.url()));
        }
        offline(s.table(), null); // checks the table name before connecting
        DataSource ds = new DriverDataSource(s.url(), s.user(), s.password());
        JdbcDialect dialect;
        JdbcLayout layout;
        boolean exists;
        try (Connection c = ds.getConnection()) {
            dialect = JdbcDialect.detect(c);
            layout = JdbcLayout.detect(c, dialect, s.table());
            exists = dialect == JdbcDialect.POSTGRESQL && tableExists(c, s.table());
        } catch (SQLException e) {
            throw new CliException(Exit.FAILED, "cannot connect to " + Redactor.url(s.url())
                    + (s.user() == null ? "" : " as " + s.user()) + ": " + Redactor.sqlMessage(e), e);
        } catch (IllegalArgumentException e) {
            throw new CliException(Exit.FAILED, e.getMessage(), e);
        }
        if (wanted != null && wanted != layout && (exists || dialect != JdbcDialect.POSTGRESQL)) {
            throw new CliException(Exit.USAGE, dialect != JdbcDialect.POSTGRESQL
                    ? "--layout partitioned needs PostgreSQL, but the database is " + dialect.name().toLowerCase(Locale.ROOT)
                    : "table " + s.table() + " exists with layout " + name(layout) + ", not " + name(wanted)
                            + "; a layout is changed by migrating the records (docs/operations.md), nothing applied");
        }
        if (wanted != null) {
            layout = wanted;
        }
        return new Database(s, dialect, JdbcIdempotencyStore.builder(ds).dialect(dialect).layout(layout)
                .table(s.table()).build());
    }

    static String name(JdbcLayout layout) {
        return layout == JdbcLayout.STANDARD ? "standard" : "partitioned";
    }

    private static boolean tableExists(Connection c, String table) throws SQLException {
        try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, table);
            try (java.sql.ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /**
     * A store that never connects, for what needs no database (the DDL of a dialect) and to check a
     * table name before connecting. {@code dialect} may be null when only the name is checked.
     */
    static JdbcIdempotencyStore offline(String table, JdbcDialect dialect) {
        return offline(table, dialect, JdbcLayout.STANDARD);
    }

    static JdbcIdempotencyStore offline(String table, JdbcDialect dialect, JdbcLayout layout) {
        JdbcIdempotencyStore.Builder b = JdbcIdempotencyStore.builder(new Offline()).table(table).layout(layout);
        if (dialect != null) {
            b.dialect(dialect);
        }
        return b.build();
    }

    String describe() {
        return store.table() + " (" + dialect.name().toLowerCase(Locale.ROOT)
                + (layout == JdbcLayout.STANDARD ? "" : ", partitioned by expiry day") + ", "
                + Redactor.url(settings.url()) + ")";
    }

    /** Refuses every connection. */
    private static final class Offline implements DataSource {
        @Override
        public Connection getConnection() throws SQLException {
            throw new SQLException("no database connection for this command");
        }

        @Override
        public Connection getConnection(String username, String password) throws SQLException {
            return getConnection();
        }

        @Override
        public PrintWriter getLogWriter() {
            return null;
        }

        @Override
        public void setLogWriter(PrintWriter out) {
            // nothing to log
        }

        @Override
        public void setLoginTimeout(int seconds) {
            // never connects
        }

        @Override
        public int getLoginTimeout() {
            return 0;
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            throw new SQLFeatureNotSupportedException("no parent logger");
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            throw new SQLException("not a wrapper for " + iface.getName());
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) {
            return false;
        }
    }
}
