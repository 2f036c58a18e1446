package io.retrysafe.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.IdempotencyKeys;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.JdbcPhaseJournal;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestDatabases;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;

/**
 * The {@code retrysafe} command end to end, in process ({@code new CommandLine(new RetrySafeCli()).execute(args)}
 * with captured out and err), against real PostgreSQL and MariaDB; records are seeded through a real
 * {@link JdbcIdempotencyStore} and aged with the database's clock.
 */
class RetrySafeCliIT {
    private static final Pattern UUID_V7 = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    private static final Pattern UUID_V4 = Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    private static final Duration LONG_LEASE = Duration.ofHours(1);
    private static final Duration RETENTION = Duration.ofDays(1);
    private static final String PASSWORD_MARKER = "pw-never-printed-" + UUID.randomUUID();

    /** Unique per run: other builds may use the same databases at the same time. */
    private final String table = "rs_cli_it_" + UUID.randomUUID().toString().substring(0, 8);
    private final Fingerprint fp = Fingerprint.sha256("request".getBytes(StandardCharsets.UTF_8));

    private JdbcDialect dialect;
    private DataSource ds;
    private JdbcIdempotencyStore store;
    private Map<String, String> env = Map.of();
    private Prompter prompter = Prompter.NONE;

    record Run(int exitCode, String out, String err) {
        List<String> errLines() {
            return err.isEmpty() ? List.of() : List.of(err.split("\\R"));
        }
    }

    /** Runs the command in process, as {@code main} does, with the test's environment and prompter. */
    private Run run(String... args) {
        return run(new CommandLine(new RetrySafeCli(env, prompter)), args);
    }

    private static Run run(CommandLine commandLine, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        int code = commandLine.execute(args);
        return new Run(code, out.toString(), err.toString());
    }

    /** The command with the connection flags of the database under test. */
    private Run runOnDb(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--url", url(), "--table", table));
        String user = dialect == JdbcDialect.POSTGRESQL ? TestDatabases.postgresUser() : TestDatabases.mariadbUser();
        String password = dialect == JdbcDialect.POSTGRESQL ? TestDatabases.postgresPassword()
                : TestDatabases.mariadbPassword();
        all.addAll(List.of("--user", user));
        if (!password.isEmpty()) {
            all.addAll(List.of("--password", password));
        }
        return run(all.toArray(String[]::new));
    }

    private String url() {
        return dialect == JdbcDialect.POSTGRESQL ? TestDatabases.postgresJdbcUrl() : TestDatabases.mariadbJdbcUrl();
    }

    private void open(JdbcDialect d, boolean createSchema) {
        dialect = d;
        ds = d == JdbcDialect.POSTGRESQL ? TestDatabases.postgres() : TestDatabases.mariadb();
        store = JdbcIdempotencyStore.builder(ds).dialect(d).table(table).build();
        if (createSchema) {
            store.createSchema();
        }
    }

    @AfterEach
    void dropTable() throws SQLException {
        if (ds != null) {
            try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                st.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }

    // ---------------------------------------------------------------- seeding

    private IdempotencyKey inProgress(String scope) {
        IdempotencyKey key = IdempotencyKey.of(scope, "k-" + UUID.randomUUID());
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, fp, token, LONG_LEASE, RETENTION)))
                .isEqualTo(new ClaimResult.Claimed(token, 1));
        return key;
    }

    private IdempotencyKey completed(String scope) {
        IdempotencyKey key = IdempotencyKey.of(scope, "k-" + UUID.randomUUID());
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(key, fp, token, LONG_LEASE, RETENTION)))
                .isEqualTo(new ClaimResult.Claimed(token, 1));
        assertThat(store.complete(key, token, StoredResponse.of(201, Map.of("Location", List.of("/payments/1")),
                "{\"id\":1}".getBytes(StandardCharsets.UTF_8)), RETENTION)).isEqualTo(FencedWrite.COMMITTED);
        return key;
    }

    /** Moves the record's creation ({@code created_at}) or expiry ({@code expires_at}) back by {@code by}. */
    private void shift(IdempotencyKey key, String column, Duration by) throws SQLException {
        String sql = dialect == JdbcDialect.POSTGRESQL
                ? "UPDATE " + table + " SET " + column + " = statement_timestamp() - ? * interval '1 millisecond'"
                : "UPDATE " + table + " SET " + column + " = UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND";
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(sql + " WHERE scope = ? AND idem_key = ?")) {
            ps.setLong(1, dialect == JdbcDialect.POSTGRESQL ? by.toMillis() : by.toMillis() * 1000);
            ps.setString(2, key.scope());
            ps.setString(3, key.value());
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    private long rows() throws SQLException {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM " + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static long stat(String out, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\s+(\\d+)").matcher(out);
        assertThat(m.find()).as("a line \"%s N\" in%n%s", name, out).isTrue();
        return Long.parseLong(m.group(1));
    }

    // ---------------------------------------------------------------- schema

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void schemaApplyCreatesTheTableAndPrintShowsTheSameDdl(JdbcDialect d) throws SQLException {
        open(d, false);
        String name = d.name().toLowerCase(Locale.ROOT);

        Run applied = runOnDb("schema", "apply", "--dialect", name);

        assertThat(applied.exitCode()).as(applied.err()).isZero();
        assertThat(applied.out()).contains("schema applied: " + table + " (" + name);
        assertThat(rows()).isZero();
        assertThat(runOnDb("schema", "apply").exitCode()).as("safe to run again, dialect detected").isZero();
        JdbcDialect other = d == JdbcDialect.POSTGRESQL ? JdbcDialect.MARIADB : JdbcDialect.POSTGRESQL;
        Run wrong = runOnDb("schema", "apply", "--dialect", other.name().toLowerCase(Locale.ROOT));
        assertThat(wrong.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(wrong.errLines()).singleElement().asString().contains("but the database is " + name);

        Run printed = run("schema", "print", "--dialect", name, "--table", table);

        assertThat(printed.exitCode()).isZero();
        assertThat(printed.out()).isEqualTo(store.schema()).contains("CREATE TABLE IF NOT EXISTS " + table + " (");
        assertThat(run("schema", "print", "--dialect", "oracle").exitCode()).isEqualTo(Exit.USAGE);
        env = Map.of(ConnectionOptions.ENV_TABLE, "from_env");
        assertThat(run("schema", "print", "--dialect", name).out()).contains("CREATE TABLE IF NOT EXISTS from_env (");
    }

    @Test
    void partitionedLayoutIsPrintedAppliedDetectedAndPurgedByDroppingWholeDays() throws SQLException {
        open(JdbcDialect.POSTGRESQL, false);
        store = JdbcIdempotencyStore.builder(ds).layout(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY).table(table).build();

        Run printed = run("schema", "print", "--dialect", "postgresql", "--layout", "partitioned", "--table", table);

        assertThat(printed.exitCode()).as(printed.err()).isZero();
        assertThat(printed.out()).isEqualTo(store.schema()).contains("PARTITION BY RANGE (expires_at)")
                .contains(table + "_claim(");
        Run onMariaDb = run("schema", "print", "--dialect", "mariadb", "--layout", "partitioned");
        assertThat(onMariaDb.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(onMariaDb.errLines()).singleElement().asString().contains("--layout partitioned needs --dialect postgresql");
        assertThat(run("schema", "print", "--dialect", "postgresql", "--layout", "sharded").exitCode())
                .isEqualTo(Exit.USAGE);

        Run applied = runOnDb("schema", "apply", "--layout", "partitioned");

        assertThat(applied.exitCode()).as(applied.err()).isZero();
        String today;
        try (Connection c = ds.getConnection(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT (statement_timestamp() AT TIME ZONE 'UTC')::date")) {
            rs.next();
            today = rs.getString(1);
        }
        assertThat(applied.out()).contains("partitioned by expiry day")
                .contains("partitions created: " + table + "_p" + today.replace("-", ""));
        Run again = runOnDb("schema", "apply");
        assertThat(again.out()).as("the layout detected").contains("partitions created: none, all there");
        Run standard = runOnDb("schema", "apply", "--layout", "standard");
        assertThat(standard.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(standard.errLines()).singleElement().asString()
                .contains("exists with layout partitioned, not standard");

        // A past day, as the job would have created it, holding three expired records.
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE " + table + "_p" + LocalDate.parse(today).minusDays(2).toString().replace("-", "")
                    + " PARTITION OF " + table + " FOR VALUES FROM ('" + LocalDate.parse(today).minusDays(2)
                    + " 00:00:00+00') TO ('" + LocalDate.parse(today).minusDays(1) + " 00:00:00+00')");
            st.execute("INSERT INTO " + table + " (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                    + " lease_expires_at, expires_at) SELECT 'old', 'k' || g, '\\x01', 'COMPLETED', gen_random_uuid(), 1,"
                    + " e, e, e FROM generate_series(1, 3) g, (SELECT '" + LocalDate.parse(today).minusDays(2)
                    + " 12:00:00+00'::timestamptz AS e) x");
        }
        IdempotencyKey live = completed("cli");
        // Expired at today's first instant: in today's partition, which is not dropped before tomorrow.
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("INSERT INTO " + table + " (scope, idem_key, fingerprint, status, owner_token, attempt, created_at,"
                    + " lease_expires_at, expires_at) SELECT 'old', 'today', '\\x01', 'COMPLETED', gen_random_uuid(), 1,"
                    + " e, e, e FROM (SELECT '" + today + " 00:00:00+00'::timestamptz AS e) x");
        }
        String pastDay = table + "_p" + LocalDate.parse(today).minusDays(2).toString().replace("-", "");

        Run dryRun = runOnDb("purge", "--dry-run");

        assertThat(dryRun.exitCode()).as(dryRun.err()).isZero();
        assertThat(dryRun.out()).contains("dry run: 1 expired day partitions would be dropped (" + pastDay + ") with 3"
                + " records, and 0 expired records deleted from the default partition")
                .contains("1 expired records stay");
        assertThat(rows()).as("a dry run deletes nothing").isEqualTo(5);

        Run purged = runOnDb("purge");

        assertThat(purged.exitCode()).as(purged.err()).isZero();
        assertThat(purged.out()).contains("dropped 1 expired day partitions (" + pastDay + ")")
                .contains("deleted 0 expired records");
        assertThat(rows()).as("the live record and today's expired one").isEqualTo(2);
        assertThat(store.inspect(live)).isPresent();
        assertThat(runOnDb("purge", "--dry-run").out()).contains("dry run: 0 expired day partitions would be dropped")
                .contains("1 expired records stay");
    }

    // ---------------------------------------------------------------- inspect, list

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void phasesListsTheCompletersBacklogByDigest(JdbcDialect d) throws Exception {
        open(d, true);
        IdempotencyKey abandoned = IdempotencyKey.of("tenant-1:POST /checkouts", "k-" + UUID.randomUUID());
        OwnerToken token = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(abandoned, fp, token, LONG_LEASE, RETENTION)))
                .isEqualTo(new ClaimResult.Claimed(token, 1));
        JdbcPhaseJournal journal = JdbcPhaseJournal.of(store);
        assertThat(journal.advance(abandoned, token, LONG_LEASE, c -> new byte[] {1})).isEqualTo(FencedWrite.COMMITTED);
        assertThat(store.release(abandoned, token)).isEqualTo(FencedWrite.COMMITTED);
        shift(abandoned, "lease_expires_at", Duration.ofMinutes(10));
        inProgress("tenant-1:POST /checkouts"); // held, and without saved steps: not the completer's

        Run listed = runOnDb("phases");

        assertThat(listed.exitCode()).as(listed.err()).isZero();
        assertThat(listed.out()).contains("(idle 5m or more) in " + table + ": 1").contains(abandoned.digest())
                .contains("tenant-1:POST /checkouts").doesNotContain(abandoned.value());
        Run recent = runOnDb("phases", "--idle-for", "1h");
        assertThat(recent.exitCode()).isEqualTo(Exit.NOTHING);
        assertThat(recent.out()).contains("(idle 1h or more) in " + table + ": 0");
        assertThat(runOnDb("phases", "--limit", "0").exitCode()).isEqualTo(Exit.USAGE);
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void inspectAndListShowRecordsByDigestNeverTheRawKey(JdbcDialect d) throws SQLException {
        open(d, true);
        IdempotencyKey stuck = inProgress("tenant-1:POST /payments");
        shift(stuck, "created_at", Duration.ofMinutes(10));
        IdempotencyKey fresh = inProgress("tenant-1:POST /payments");
        IdempotencyKey done = completed("tenant-2:POST /payments");

        Run inspected = runOnDb("inspect", "--scope", done.scope(), "--key", done.value());
        assertThat(inspected.exitCode()).as(inspected.err()).isZero();
        assertThat(inspected.out()).contains("key digest   " + done.digest()).contains("status       COMPLETED")
                .contains("response     201, headers [Location], body 8 bytes").doesNotContain(done.value());

        Run stuckKeys = runOnDb("list", "--status", "IN_PROGRESS", "--older-than", "5m");
        assertThat(stuckKeys.exitCode()).as(stuckKeys.err()).isZero();
        assertThat(stuckKeys.out().lines()).hasSize(2).first().asString().startsWith("SCOPE");
        assertThat(stuckKeys.out()).contains(stuck.digest()).doesNotContain(fresh.digest())
                .doesNotContain(stuck.value()).contains("tenant-1:POST /payments");
        Run all = runOnDb("list", "--limit", "2");
        assertThat(all.exitCode()).isZero();
        assertThat(all.out()).contains(stuck.digest(), fresh.digest()).doesNotContain(done.digest())
                .contains("there may be more");

        Run none = runOnDb("list", "--status", "failed");
        assertThat(none.exitCode()).as("nothing found").isEqualTo(Exit.NOTHING);
        assertThat(none.out()).startsWith("no live FAILED record");
        Run absent = runOnDb("inspect", "--scope", "tenant-1", "--key", "k-absent-key-123");
        assertThat(absent.exitCode()).isEqualTo(Exit.NOTHING);
        assertThat(absent.out()).contains("no live record").doesNotContain("k-absent-key-123");
        Run badKey = runOnDb("inspect", "--scope", "tenant-1", "--key", "bad key é");
        assertThat(badKey.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(badKey.errLines()).singleElement().asString().contains("printable ASCII");
        assertThat(runOnDb("list", "--limit", "0").exitCode()).isEqualTo(Exit.USAGE);
        assertThat(runOnDb("list", "--older-than", "5 minutes").exitCode()).isEqualTo(Exit.USAGE);
    }

    // ---------------------------------------------------------------- release

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void releaseAsksForTheDigestThenFreesTheKeyForAttempt2(JdbcDialect d) {
        open(d, true);
        IdempotencyKey stuck = inProgress("tenant-1:POST /payments");

        Run noConsole = runOnDb("release", "--scope", stuck.scope(), "--key", stuck.value());
        assertThat(noConsole.exitCode()).as("no terminal, no --yes: refused").isEqualTo(Exit.USAGE);
        assertThat(noConsole.errLines()).singleElement().asString().contains("pass --yes");

        List<String> prompts = Collections.synchronizedList(new ArrayList<>());
        prompter = answering(prompts, "not-the-digest");
        Run wrong = runOnDb("release", "--scope", stuck.scope(), "--key", stuck.value());
        assertThat(wrong.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(wrong.errLines()).singleElement().asString().contains("not confirmed");
        assertThat(store.inspect(stuck)).get().extracting(r -> r.status()).isEqualTo(RecordStatus.IN_PROGRESS);

        prompter = answering(prompts, stuck.digest());
        Run released = runOnDb("release", "--scope", stuck.scope(), "--key", stuck.value());

        assertThat(released.exitCode()).as(released.err()).isZero();
        assertThat(prompts).last().asString().contains("type the key's digest (" + stuck.digest() + ") to confirm");
        assertThat(released.out()).contains("released").contains("attempt 2").doesNotContain(stuck.value());
        OwnerToken retry = OwnerToken.random();
        assertThat(store.tryClaim(new ClaimRequest(stuck, fp, retry, LONG_LEASE, RETENTION)))
                .as("the next retry runs as attempt 2").isEqualTo(new ClaimResult.Claimed(retry, 2));
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void releaseLeavesAloneANewAttemptThatTookOverWhileTheOperatorConfirmed(JdbcDialect d) {
        open(d, true);
        IdempotencyKey stuck = inProgress("tenant-1:POST /payments");
        OwnerToken retry = OwnerToken.random();
        prompter = new Prompter() {
            @Override
            public boolean available() {
                return true;
            }

            @Override
            public String readLine(String prompt) {
                try {
                    shift(stuck, "lease_expires_at", Duration.ofSeconds(1)); // the lease runs out …
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
                assertThat(store.tryClaim(new ClaimRequest(stuck, fp, retry, LONG_LEASE, RETENTION)))
                        .as("… and a retry takes the key over").isEqualTo(new ClaimResult.Claimed(retry, 2));
                return stuck.digest();
            }
        };

        Run r = runOnDb("release", "--scope", stuck.scope(), "--key", stuck.value());

        assertThat(r.exitCode()).as(r.err()).isEqualTo(Exit.NOTHING);
        assertThat(r.out()).contains("taken over by attempt 2").contains("nothing changed");
        assertThat(store.inspect(stuck)).get().satisfies(rec -> {
            assertThat(rec.status()).isEqualTo(RecordStatus.IN_PROGRESS);
            assertThat(rec.attempt()).isEqualTo(2);
        });
        assertThat(store.complete(stuck, retry, StoredResponse.of(201, new byte[0]), RETENTION))
                .as("the healthy attempt still completes").isEqualTo(FencedWrite.COMMITTED);
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void releaseOfACompletedOrAbsentKeyChangesNothing(JdbcDialect d) {
        open(d, true);
        IdempotencyKey done = completed("tenant-1");
        prompter = answering(new ArrayList<>(), done.digest());

        Run completedKey = runOnDb("release", "--scope", done.scope(), "--key", done.value(), "--yes");

        assertThat(completedKey.exitCode()).isEqualTo(Exit.NOTHING);
        assertThat(completedKey.out()).contains("is COMPLETED").contains("nothing changed");
        assertThat(store.inspect(done)).get().satisfies(r -> {
            assertThat(r.status()).isEqualTo(RecordStatus.COMPLETED);
            assertThat(r.response()).isPresent();
        });
        Run absent = runOnDb("release", "--scope", "tenant-1", "--key", "k-absent-key-123", "--yes");
        assertThat(absent.exitCode()).isEqualTo(Exit.NOTHING);
        assertThat(absent.out()).contains("nothing to release");
    }

    private static Prompter answering(List<String> prompts, String answer) {
        return new Prompter() {
            @Override
            public boolean available() {
                return true;
            }

            @Override
            public String readLine(String prompt) {
                prompts.add(prompt);
                return answer;
            }
        };
    }

    // ---------------------------------------------------------------- purge, stats

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void purgeDryRunCountsThenPurgeDeletesOnlyExpiredRecordsAndStatsAddUp(JdbcDialect d) throws SQLException {
        open(d, true);
        inProgress("s");
        IdempotencyKey aged = completed("s");
        shift(aged, "created_at", Duration.ofHours(3));
        for (int i = 0; i < 3; i++) {
            shift(completed("s"), "expires_at", Duration.ofMinutes(1));
        }

        Run stats = runOnDb("stats");
        assertThat(stats.exitCode()).as(stats.err()).isZero();
        assertThat(stat(stats.out(), "live records")).isEqualTo(2);
        assertThat(stat(stats.out(), "  IN_PROGRESS")).isEqualTo(1);
        assertThat(stat(stats.out(), "  COMPLETED")).isEqualTo(1);
        assertThat(stat(stats.out(), "  FAILED")).isZero();
        assertThat(stat(stats.out(), "  <1h")).isEqualTo(1);
        assertThat(stat(stats.out(), "  <24h")).isEqualTo(1);
        assertThat(stat(stats.out(), "expired, not purged")).isEqualTo(3);
        assertThat(stat(stats.out(), "size")).isPositive();

        Run dryRun = runOnDb("purge", "--dry-run");
        assertThat(dryRun.exitCode()).as(dryRun.err()).isZero();
        assertThat(dryRun.out()).contains("dry run: 3 expired records would be deleted");
        assertThat(rows()).as("a dry run deletes nothing").isEqualTo(5);

        Run purged = runOnDb("purge", "--batch-size", "2");
        assertThat(purged.exitCode()).as(purged.err()).isZero();
        assertThat(purged.out()).contains("deleted 3 expired records").contains("in 2 batches");
        assertThat(rows()).isEqualTo(2);
        assertThat(runOnDb("purge", "--dry-run").out()).contains("dry run: 0 expired records");
        assertThat(stat(runOnDb("stats").out(), "expired, not purged")).isZero();

        Run badBatch = runOnDb("purge", "--batch-size", "0");
        assertThat(badBatch.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(badBatch.errLines()).singleElement().asString().contains("batchSize must be between 1 and");
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void aPurgeStoppedAtMaxBatchesSaysSoAndTheNextRunContinues(JdbcDialect d) throws SQLException {
        open(d, true);
        for (int i = 0; i < 3; i++) {
            shift(completed("s"), "expires_at", Duration.ofMinutes(1));
        }

        Run bounded = runOnDb("purge", "--batch-size", "1", "--max-batches", "2");
        assertThat(bounded.exitCode()).as(bounded.err()).isZero();
        assertThat(bounded.out()).contains("deleted 2 expired records").contains("in 2 batches")
                .contains("stopped at --max-batches 2 with expired records left; the next run continues");
        assertThat(rows()).isEqualTo(1);

        Run rest = runOnDb("purge", "--batch-size", "1", "--max-batches", "2");
        assertThat(rest.exitCode()).as(rest.err()).isZero();
        assertThat(rest.out()).contains("deleted 1 expired records").contains("in 2 batches")
                .doesNotContain("stopped at");
        assertThat(rows()).isZero();
    }

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void purgeMaxDutyCyclePacesTheBatchesAndDeletesOnlyExpiredRecords(JdbcDialect d) throws SQLException {
        open(d, true);
        inProgress("s");
        for (int i = 0; i < 3; i++) {
            shift(completed("s"), "expires_at", Duration.ofMinutes(1));
        }

        Run paced = runOnDb("purge", "--batch-size", "2", "--max-duty-cycle", "0.5");
        assertThat(paced.exitCode()).as(paced.err()).isZero();
        assertThat(paced.out()).contains("deleted 3 expired records").contains("in 2 batches")
                .contains("(paced: batches at most 0.5 of the time)");
        assertThat(rows()).isEqualTo(1);

        for (String bad : List.of("0", "1.5", "NaN")) {
            Run refused = runOnDb("purge", "--max-duty-cycle", bad);
            assertThat(refused.exitCode()).as(bad).isEqualTo(Exit.USAGE);
            assertThat(refused.errLines()).singleElement().asString()
                    .contains("maxDutyCycle must be more than 0 and at most 1, but was " + Double.parseDouble(bad));
        }
    }

    // ---------------------------------------------------------------- connection settings and failures

    @ParameterizedTest
    @EnumSource(JdbcDialect.class)
    void settingsComeFromTheEnvironmentAndFlagsWin(JdbcDialect d) {
        open(d, true);
        inProgress("s");
        Map<String, String> e = new HashMap<>();
        e.put(ConnectionOptions.ENV_URL, url());
        e.put(ConnectionOptions.ENV_USER,
                d == JdbcDialect.POSTGRESQL ? TestDatabases.postgresUser() : TestDatabases.mariadbUser());
        e.put(ConnectionOptions.ENV_PASSWORD,
                d == JdbcDialect.POSTGRESQL ? TestDatabases.postgresPassword() : TestDatabases.mariadbPassword());
        e.put(ConnectionOptions.ENV_TABLE, table);
        env = e;

        Run fromEnv = run("stats");
        assertThat(fromEnv.exitCode()).as(fromEnv.err()).isZero();
        assertThat(stat(fromEnv.out(), "live records")).isEqualTo(1);

        Run flagWins = run("stats", "--table", table + "_absent");
        assertThat(flagWins.exitCode()).isEqualTo(Exit.FAILED);
        assertThat(flagWins.errLines()).singleElement().asString().startsWith("retrysafe stats: ")
                .contains(table + "_absent").contains("retrysafe schema apply");
    }

    @Test
    void anUnreachableDatabaseIsExit3OnOneLineWithoutThePassword() {
        env = Map.of(ConnectionOptions.ENV_PASSWORD, PASSWORD_MARKER);
        for (String url : List.of("jdbc:postgresql://127.0.0.1:1/none", "jdbc:mariadb://127.0.0.1:1/none",
                "jdbc:postgresql://127.0.0.1:1/none?password=" + PASSWORD_MARKER)) {
            Run r = run("stats", "--url", url, "--user", "operator");
            assertThat(r.exitCode()).as(url).isEqualTo(Exit.FAILED);
            assertThat(r.errLines()).as(url).singleElement().asString().startsWith("retrysafe stats: cannot connect to ")
                    .contains("127.0.0.1:1").doesNotContain(PASSWORD_MARKER);
            assertThat(r.out()).isEmpty();
        }
        Run flagPassword = run("list", "--url", "jdbc:postgresql://127.0.0.1:1/none", "--password", PASSWORD_MARKER,
                "--verbose");
        assertThat(flagPassword.exitCode()).isEqualTo(Exit.FAILED);
        assertThat(flagPassword.errLines()).as("--verbose adds the stack trace").hasSizeGreaterThan(1);
        assertThat(flagPassword.err()).contains("java.net.ConnectException").doesNotContain(PASSWORD_MARKER);

        Run notJdbc = run("stats", "--url", "jdbc:oracle:thin:@db:1521/x");
        assertThat(notJdbc.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(notJdbc.errLines()).singleElement().asString().contains("jdbc:postgresql: or jdbc:mariadb:");
        env = Map.of();
        Run noUrl = run("stats");
        assertThat(noUrl.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(noUrl.errLines()).singleElement().asString().contains("RETRYSAFE_JDBC_URL");
        assertThat(run("stats", "--url", "jdbc:postgresql://127.0.0.1:1/x", "--table", "t; DROP TABLE t").exitCode())
                .as("a bad table name is refused before connecting").isEqualTo(Exit.USAGE);
    }

    @Test
    void anUnknownOptionIsAUsageError() {
        Run plain = run(new CommandLine(new RetrySafeCli()), "stats", "--bogus");
        assertThat(plain.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(plain.errLines()).first().asString().isEqualTo("Unknown option: '--bogus'");

        Run strayPassword = run(RetrySafeCli.commandLine(), "stats", "--password", PASSWORD_MARKER, PASSWORD_MARKER);
        assertThat(strayPassword.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(strayPassword.errLines()).singleElement().asString().contains("Unmatched argument")
                .doesNotContain(PASSWORD_MARKER);

        Run asMainRunsIt = run(RetrySafeCli.commandLine(), "stats", "--bogus");
        assertThat(asMainRunsIt.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(asMainRunsIt.errLines()).containsExactly(
                "retrysafe stats: Unknown option: '--bogus' (see retrysafe stats --help)");
        assertThat(run(RetrySafeCli.commandLine()).exitCode()).as("no command").isEqualTo(Exit.USAGE);
        assertThat(run(RetrySafeCli.commandLine(), "schema").errLines()).singleElement().asString()
                .contains("print or apply");

        Run help = run("--help");
        assertThat(help.exitCode()).isZero();
        assertThat(help.out()).contains("Exit codes:").contains("3   database unreachable")
                .contains("RETRYSAFE_JDBC_URL");
    }

    // ---------------------------------------------------------------- keygen

    @Test
    void keygenMakesUuidV7ByDefaultV4AndIntentKeys(@TempDir Path dir) throws Exception {
        Run v7 = run("keygen", "--count", "50");
        assertThat(v7.exitCode()).isZero();
        List<String> keys = v7.out().lines().toList();
        assertThat(keys).hasSize(50).allMatch(k -> UUID_V7.matcher(k).matches()).doesNotHaveDuplicates()
                .isSorted();

        Run v4 = run("keygen", "--type", "v4", "--count", "3");
        assertThat(v4.out().lines().toList()).hasSize(3).allMatch(k -> UUID_V4.matcher(k).matches());

        String json = "{\"amount\": 10, \"invoice\": \"INV-7\"}";
        String reordered = "{\"invoice\":\"INV-7\",\"amount\":10}";
        Run intent = run("keygen", "--type", "intent", "--principal", "user-42", "--operation", "create-payment",
                "--payload-json", json);
        assertThat(intent.out().strip()).isEqualTo(IdempotencyKeys.intentFromJson("user-42", "create-payment",
                reordered.getBytes(StandardCharsets.UTF_8))).hasSize(IdempotencyKeys.INTENT_KEY_LENGTH);
        Run dated = run("keygen", "--type", "intent", "--principal", "user-42", "--operation", "settle",
                "--payload-json", json, "--business-date", "2024-06-30");
        assertThat(dated.out().strip()).isEqualTo(IdempotencyKeys.intentFromJson("user-42", "settle",
                LocalDate.of(2024, 6, 30), json.getBytes(StandardCharsets.UTF_8)));
        Path payload = Files.write(dir.resolve("payload.bin"), new byte[] {1, 2, 3});
        Run fromFile = run("keygen", "--type", "intent", "--principal", "p", "--operation", "o", "--payload-file",
                payload.toString());
        assertThat(fromFile.out().strip()).isEqualTo(IdempotencyKeys.intent("p", "o", new byte[] {1, 2, 3}));
    }

    static Stream<Arguments> badKeygenArguments() {
        return Stream.of(
                Arguments.of(List.of("--count", "0"), "--count must be between 1 and 100000, but was 0"),
                Arguments.of(List.of("--type", "v9"), "Invalid value for option '--type'"),
                Arguments.of(List.of("--principal", "p"), "go with --type intent"),
                Arguments.of(List.of("--type", "intent", "--principal", "p", "--operation", "o"), "exactly one of"),
                Arguments.of(List.of("--type", "intent", "--operation", "o", "--payload-json", "{}"),
                        "needs --principal and --operation"),
                Arguments.of(List.of("--type", "intent", "--principal", "p", "--operation", "o", "--payload-json", "{}",
                        "--count", "2"), "--count must be 1"),
                Arguments.of(List.of("--type", "intent", "--principal", "p", "--operation", "o", "--payload-json",
                        "{\"a\":"), "JSON"),
                Arguments.of(List.of("--type", "intent", "--principal", "p", "--operation", "o", "--payload-json", "{}",
                        "--business-date", "30.06.2024"), "must be a date as yyyy-MM-dd"),
                Arguments.of(List.of("--type", "intent", "--principal", "p", "--operation", "o", "--payload-file",
                        "/nonexistent/payload"), "no such file"));
    }

    @ParameterizedTest
    @MethodSource("badKeygenArguments")
    void keygenRefusesBadArgumentsWithExit2(List<String> args, String message) {
        List<String> all = new ArrayList<>(List.of("keygen"));
        all.addAll(args);
        Run r = run(RetrySafeCli.commandLine(), all.toArray(String[]::new));
        assertThat(r.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(r.errLines()).singleElement().asString().contains(message);
        assertThat(r.out()).isEmpty();
    }

    // ---------------------------------------------------------------- lint

    static Stream<Arguments> lintTable() {
        return Stream.of(
                Arguments.of(IdempotencyKeys.uuidV7(), Exit.OK, null),
                Arguments.of(IdempotencyKeys.uuidV4(), Exit.OK, null),
                Arguments.of(IdempotencyKeys.intent("p", "o", new byte[0]), Exit.OK, null),
                Arguments.of("order-17", Exit.NOTHING, "WARNING sequential"),
                Arguments.of("pay_" + (System.currentTimeMillis() - 60_000), Exit.NOTHING, "WARNING timestamp"),
                Arguments.of("c232ab00-9414-11ec-b3c8-9f6bdeced846", Exit.NOTHING, "WARNING uuid_v1"),
                Arguments.of("Xk9#mP2$vL7@qR4!wN8%zT1^bY6&cJ3*", Exit.OK, null),
                Arguments.of("a key, \"quoted\" with 9f3kLmQ2xZ7vB1nR", Exit.NOTHING, "WARNING needs_quoting"),
                Arguments.of("", Exit.USAGE, "ERROR empty"),
                Arguments.of("clé-d'idempotence-9f3kLmQ2xZ7vB1nR", Exit.USAGE, "ERROR not_printable_ascii"),
                Arguments.of("k".repeat(256), Exit.USAGE, "ERROR too_long"));
    }

    @ParameterizedTest
    @MethodSource("lintTable")
    void lintExitCodeIsTheWorstFinding(String key, int exitCode, String finding) {
        Run r = run("lint", "--", key);
        assertThat(r.exitCode()).as(r.out()).isEqualTo(exitCode);
        if (finding == null) {
            assertThat(r.out().lines()).singleElement().asString().startsWith(LintCommand.quote(key) + ": ok (~");
        } else {
            assertThat(r.out()).contains(finding);
        }
        assertThat(r.err()).isEmpty();
    }

    @Test
    void lintOfManyKeysSummarisesAndExitsWithTheWorst() {
        String good = IdempotencyKeys.uuidV7();
        Run warned = run("lint", good, "order-17");
        assertThat(warned.exitCode()).isEqualTo(Exit.NOTHING);
        assertThat(warned.out()).endsWith("2 keys: 1 clean, 1 with warnings, 0 refused" + System.lineSeparator());
        Run refused = run("lint", good, "order-17", "");
        assertThat(refused.exitCode()).isEqualTo(Exit.USAGE);
        assertThat(refused.out()).contains("\"\": refused by the server").contains("1 refused");
        Run stricter = run("lint", "--min-length", "40", good);
        assertThat(stricter.exitCode()).as("the server's own KeyRules").isEqualTo(Exit.USAGE);
        assertThat(stricter.out()).contains("ERROR too_short");
        assertThat(run("lint").exitCode()).as("no key").isEqualTo(Exit.USAGE);
    }
}
