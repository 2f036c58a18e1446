package io.retrysafe.cli;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Locale;
import java.util.Properties;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A new connection per call, from {@link DriverManager}: a command makes a handful, so no pool. An
 * unreachable server fails within seconds, not the drivers' defaults (MariaDB waits 30 s), unless
 * the URL sets its own {@code connectTimeout}.
 */
final class DriverDataSource implements DataSource {
    static final int CONNECT_TIMEOUT_SECONDS = 10;

    private final String url;
    private final String user;
    private final String password;

    DriverDataSource(String url, String user, String password) {
        this.url = url;
        this.user = user;
        this.password = password;
    }

    @Override
    public Connection getConnection() throws SQLException {
        return getConnection(user, password);
    }

    @Override
    public Connection getConnection(String username, String pw) throws SQLException {
        Properties props = new Properties();
        if (username != null) {
            props.setProperty("user", username);
        }
        if (pw != null) {
            props.setProperty("password", pw);
        }
        String lower = url.toLowerCase(Locale.ROOT);
        if (!lower.contains("connecttimeout=")) {
            if (lower.startsWith("jdbc:postgresql:")) {
                props.setProperty("connectTimeout", Integer.toString(CONNECT_TIMEOUT_SECONDS)); // seconds
                props.setProperty("loginTimeout", Integer.toString(CONNECT_TIMEOUT_SECONDS));
            } else {
                props.setProperty("connectTimeout", Integer.toString(CONNECT_TIMEOUT_SECONDS * 1000)); // milliseconds
            }
        }
        return DriverManager.getConnection(url, props);
    }

    @Override
    public PrintWriter getLogWriter() {
        return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {
        // no log writer: the drivers log through their own loggers
    }

    @Override
    public void setLoginTimeout(int seconds) {
        // fixed: CONNECT_TIMEOUT_SECONDS, or the URL's connectTimeout
    }

    @Override
    public int getLoginTimeout() {
        return CONNECT_TIMEOUT_SECONDS;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
        throw new SQLFeatureNotSupportedException("no parent logger");
    }

    @Override
    public <T> T unwrap(Class<T> iface) throws SQLException {
        if (iface.isInstance(this)) {
            return iface.cast(this);
        }
        throw new SQLException("not a wrapper for " + iface.getName());
    }

    @Override
    public boolean isWrapperFor(Class<?> iface) {
        return iface.isInstance(this);
    }

    @Override
    public String toString() {
        return "DriverDataSource[" + url + "]";
    }
}
