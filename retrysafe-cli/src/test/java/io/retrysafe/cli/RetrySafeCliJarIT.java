package io.retrysafe.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.testservices.TestDatabases;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The shaded jar runs on its own: {@code java -jar retrysafe-cli-<version>.jar} in a child JVM, with
 * nothing on its class path but the jar (picocli, the store and both JDBC drivers inside).
 */
class RetrySafeCliJarIT {
    /** A JVM start and a command on a slow, loaded machine. */
    private static final long BOUND_SECONDS = 120;

    @TempDir
    Path dir;

    record Result(int exitCode, String out, String err) {
    }

    private Result java(Map<String, String> env, String... args) throws IOException, InterruptedException {
        Path jar = Path.of(System.getProperty("retrysafe.cli.jar", "target/retrysafe-cli.jar"));
        assertThat(jar).as("the shaded jar, built by `package`").isRegularFile();
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", jar.toString()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().keySet().removeIf(name -> name.startsWith("RETRYSAFE_"));
        pb.environment().putAll(env);
        Process process = pb.start();
        if (!process.waitFor(BOUND_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            fail("java -jar " + String.join(" ", args) + " did not end within " + BOUND_SECONDS + " s");
        }
        return new Result(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8));
    }

    @Test
    void keygenAndLintRunFromTheJar() throws Exception {
        Result keygen = java(Map.of(), "keygen", "--count", "3");
        assertThat(keygen.exitCode()).as(keygen.err()).isZero();
        List<String> keys = keygen.out().lines().toList();
        assertThat(keys).hasSize(3).allMatch(k -> k.matches("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));

        Result clean = java(Map.of(), "lint", keys.get(0));
        assertThat(clean.exitCode()).as(clean.out() + clean.err()).isZero();
        assertThat(clean.out()).contains(": ok (");
        Result warned = java(Map.of(), "lint", keys.get(1), "order-17");
        assertThat(warned.exitCode()).isEqualTo(Exit.NOTHING);
        assertThat(warned.out()).contains("WARNING sequential");
        Result refused = java(Map.of(), "lint", "");
        assertThat(refused.exitCode()).isEqualTo(Exit.USAGE);

        Result usage = java(Map.of(), "lint", "--bogus", keys.get(2));
        assertThat(usage.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(usage.err().lines().toList()).containsExactly(
                "retrysafe lint: Unknown option: '--bogus' (see retrysafe lint --help)");
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void statsRunsFromTheJarWithTheDriverInside(JdbcDialect dialect) throws Exception {
        DataSource ds = dialect == JdbcDialect.POSTGRESQL ? TestDatabases.postgres() : TestDatabases.mariadb();
        String table = "rs_cli_jar_it_" + UUID.randomUUID().toString().substring(0, 8);
        JdbcIdempotencyStore.builder(ds).dialect(dialect).table(table).build().createSchema();
        try {
            boolean pg = dialect == JdbcDialect.POSTGRESQL;
            Result stats = java(Map.of(
                    ConnectionOptions.ENV_URL, pg ? TestDatabases.postgresJdbcUrl() : TestDatabases.mariadbJdbcUrl(),
                    ConnectionOptions.ENV_USER, pg ? TestDatabases.postgresUser() : TestDatabases.mariadbUser(),
                    ConnectionOptions.ENV_PASSWORD, pg ? TestDatabases.postgresPassword() : TestDatabases.mariadbPassword(),
                    ConnectionOptions.ENV_TABLE, table), "stats");
            assertThat(stats.exitCode()).as(stats.err()).isZero();
            assertThat(stats.out()).contains(table + " (" + dialect.name().toLowerCase(java.util.Locale.ROOT))
                    .containsPattern("(?m)^live records\\s+0$");
            assertThat(stats.err()).as("no log lines without --verbose").isEmpty();
        } finally {
            try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                st.execute("DROP TABLE IF EXISTS " + table);
            } catch (SQLException e) {
                // best effort: the table name is unique to this run
            }
        }
    }

    @Test
    void theConsoleServesFromTheJar() throws Exception {
        DataSource ds = TestDatabases.postgres();
        String table = "rs_cli_jar_it_" + UUID.randomUUID().toString().substring(0, 8);
        JdbcIdempotencyStore.builder(ds).dialect(JdbcDialect.POSTGRESQL).table(table).build().createSchema();
        String token = "jar-token-" + UUID.randomUUID();
        Path jar = Path.of(System.getProperty("retrysafe.cli.jar", "target/retrysafe-cli.jar"));
        Path out = Files.createTempFile(dir, "console", ".txt");
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", jar.toString(), "console", "--port", "0").redirectOutput(out.toFile())
                .redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        pb.environment().keySet().removeIf(name -> name.startsWith("RETRYSAFE_"));
        pb.environment().putAll(Map.of(ConnectionOptions.ENV_URL, TestDatabases.postgresJdbcUrl(),
                ConnectionOptions.ENV_USER, TestDatabases.postgresUser(),
                ConnectionOptions.ENV_PASSWORD, TestDatabases.postgresPassword(), ConnectionOptions.ENV_TABLE, table,
                ConsoleCommand.ENV_TOKEN, token));
        Process console = pb.start();
        try {
            Pattern address = Pattern.compile("open (http://127\\.0\\.0\\.1:\\d+/)");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(BOUND_SECONDS);
            Matcher m = address.matcher("");
            while (!m.reset(Files.readString(out)).find()) {
                assertThat(console.isAlive()).as("the console is still running: %s", Files.readString(out)).isTrue();
                assertThat(System.nanoTime()).as("the console printed its address in time").isLessThan(deadline);
                console.waitFor(100, TimeUnit.MILLISECONDS); // polls the output file, bounded by the deadline
            }
            assertThat(Files.readString(out)).as("a given token is never printed").doesNotContain(token);
            HttpClient http = HttpClient.newHttpClient();
            HttpResponse<String> css = http.send(HttpRequest.newBuilder(
                    URI.create(m.group(1) + "static/console.css")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(css.statusCode()).as("the stylesheet ships inside the jar").isEqualTo(200);
            HttpResponse<String> overview = http.send(HttpRequest.newBuilder(
                    URI.create(m.group(1))).header("Authorization", "Bearer " + token).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(overview.statusCode()).isEqualTo(200);
            assertThat(overview.body()).contains("<h1>Overview</h1>", table);
        } finally {
            console.destroy();
            console.waitFor(10, TimeUnit.SECONDS);
            try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                st.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }
}
