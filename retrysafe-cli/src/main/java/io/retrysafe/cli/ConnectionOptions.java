package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcIdempotencyStore;
import java.util.Map;
import picocli.CommandLine.Option;

/** Where the records table is: flags, else the environment. Flags win. */
final class ConnectionOptions {
    static final String ENV_URL = "RETRYSAFE_JDBC_URL";
    static final String ENV_USER = "RETRYSAFE_JDBC_USER";
    static final String ENV_PASSWORD = "RETRYSAFE_JDBC_PASSWORD";
    static final String ENV_TABLE = "RETRYSAFE_TABLE";

    @Option(names = "--url", paramLabel = "JDBC_URL",
            description = "jdbc:postgresql://… or jdbc:mariadb://… (default: env " + ENV_URL + ")")
    String url;

    @Option(names = "--user", paramLabel = "USER", description = "database user (default: env " + ENV_USER + ")")
    String user;

    @Option(names = "--password", paramLabel = "PASSWORD",
            description = "database password (default: env " + ENV_PASSWORD + "; prefer the environment: "
                    + "a command line is visible to other users of the machine). Never printed.")
    String password;

    @Option(names = "--table", paramLabel = "TABLE",
            description = "records table, optionally schema-qualified (default: env " + ENV_TABLE + ", else "
                    + JdbcIdempotencyStore.DEFAULT_TABLE + ")")
    String table;

    /** The settings in force: each flag, else its variable. */
    Settings resolve(Map<String, String> env) {
        return new Settings(pick(url, env, ENV_URL), pick(user, env, ENV_USER), pick(password, env, ENV_PASSWORD),
                table(table, env));
    }

    static String table(String flag, Map<String, String> env) {
        String t = pick(flag, env, ENV_TABLE);
        return t == null ? JdbcIdempotencyStore.DEFAULT_TABLE : t;
    }

    private static String pick(String flag, Map<String, String> env, String name) {
        if (flag != null) {
            return flag;
        }
        String value = env.get(name);
        return value == null || value.isEmpty() ? null : value;
    }

    /** Resolved connection settings; {@link #toString()} leaves the password out. */
    record Settings(String url, String user, String password, String table) {
        @Override
        public String toString() {
            return "Settings[url=" + url + ", user=" + user + ", table=" + table + "]";
        }
    }
}
