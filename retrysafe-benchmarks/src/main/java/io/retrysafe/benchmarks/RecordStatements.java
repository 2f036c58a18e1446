package io.retrysafe.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.sql.BindMarkers;
import io.retrysafe.sql.PostgresSqlText;
import io.retrysafe.testservices.TestDatabases;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What each statement of a record costs PostgreSQL: the record's statements, as the JDBC store sends them
 * (their text is the store's own), run by {@code pgbench} one statement a round trip, so that its
 * {@code -r} report gives each one's latency. One client, prepared statements, on a table of
 * {@code --rows} completed records, planned after {@code VACUUM ANALYZE}. The transactions take turns at
 * random, so a change in the machine's load hits all of them alike:
 *
 * <ul>
 *   <li><b>key first</b>: the claim's three statements (the lock bound, the insert or takeover, the bound's
 *       restore), then the completion's update, then {@code COMMIT};
 *   <li><b>key first, the floor</b>: a plain insert of the record in progress, then the same update: the least
 *       that writing the record before the work and completing it after can cost;
 *   <li><b>key last</b>: the look-up, then the completed record's insert, which sets the bound and restores it;
 *   <li><b>insert last</b>: the completed record's insert alone (the benchmarks' hand-written probe);
 *   <li><b>nothing</b>: {@code SELECT 1} in a transaction, a round trip that does no work.
 * </ul>
 *
 * <p>A statement's time in the server is its latency less that of {@code SELECT 1} in the same run: the
 * round trip and the protocol's work are in both. Usage ({@code pgbench} on the {@code PATH}, PostgreSQL
 * found as by the tests): {@code java -cp retrysafe-benchmarks/target/benchmarks.jar
 * io.retrysafe.benchmarks.RecordStatements [--runs 3] [--seconds 40] [--rows 200000]}.
 */
public final class RecordStatements {
    private static final String TABLE = "rs_statements_bench";
    private static final String KEY = "('k' || :n || '-' || :m)";
    private static final String TOKEN = "'00000000-0000-0000-0000-000000000001'";
    private static final String BODY = "convert_to('{\"id\":\"pay-0123456789\",\"account\":\"acc-1\",\"amount\":700,"
            + "\"currency\":\"EUR\",\"status\":\"BOOKED\"}', 'UTF8')";
    private static final String HEADERS = "'content-type: application/json'";
    private static final Pattern NUMBERED = Pattern.compile("\\$(\\d+)::(\\w+)");
    private static final Pattern SCRIPT = Pattern.compile("SQL script \\d+: (\\S+)");
    private static final Pattern LATENCY = Pattern.compile("^\\s+([\\d.]+)\\s+\\d+\\s+(.+)$");

    private RecordStatements() {
    }

    public static void main(String[] args) throws Exception {
        int runs = 3;
        int seconds = 40;
        long rows = 200_000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--runs" -> runs = Integer.parseInt(args[++i]);
                case "--seconds" -> seconds = Integer.parseInt(args[++i]);
                case "--rows" -> rows = Long.parseLong(args[++i]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]
                        + "; usage: [--runs 3] [--seconds 40] [--rows 200000]");
            }
        }
        String url = TestDatabases.postgresJdbcUrl();
        Matcher m = RoundTrips.PG_URL.matcher(url);
        if (!m.matches()) {
            throw new IllegalArgumentException("expected jdbc:postgresql://host[:port]/database[?...], but was " + url);
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(TestDatabases.postgresUser());
        config.setPassword(TestDatabases.postgresPassword());
        config.setMaximumPoolSize(2);
        Map<String, List<String>> transactions = transactions();
        Path dir = Files.createTempDirectory("record-statements");
        Map<String, Path> scripts = write(dir, transactions);
        List<Map<String, List<Double>>> results = new ArrayList<>();
        try (HikariDataSource pool = new HikariDataSource(config)) {
            PurgeAtScale.exec(pool, "DROP TABLE IF EXISTS " + TABLE);
            JdbcIdempotencyStore.builder(pool).table(TABLE).build().createSchema();
            try {
                PurgeAtScale.exec(pool, "INSERT INTO " + TABLE + " (scope, idem_key, fingerprint, status, owner_token, attempt,"
                        + " created_at, lease_expires_at, completed_at, expires_at, response_status, response_headers,"
                        + " response_body) SELECT 'bench', gen_random_uuid()::text, '\\xabcd', 'COMPLETED',"
                        + " gen_random_uuid(), 1, now(), now(), now(), now() + interval '1 day', 201, " + HEADERS + ", "
                        + BODY + " FROM generate_series(1, " + rows + ")");
                PurgeAtScale.exec(pool, "VACUUM ANALYZE " + TABLE);
                PurgeAtScale.exec(pool, "CHECKPOINT");
                System.out.printf(Locale.ROOT, "%s: %,d completed records; pgbench -M prepared -r, 1 client, %d s, %d"
                        + " runs; scripts in %s%n", url, rows, seconds, runs, dir);
                for (int run = 1; run <= runs; run++) {
                    results.add(pgbench(m, scripts, seconds));
                    System.out.printf(Locale.ROOT, "run %d done%n", run);
                }
            } finally {
                PurgeAtScale.exec(pool, "DROP TABLE IF EXISTS " + TABLE);
            }
        }
        report(transactions, results);
    }

    /** Each transaction's statements, with the store's statement text and literal values. */
    private static Map<String, List<String>> transactions() {
        PostgresSqlText text = new PostgresSqlText(TABLE, BindMarkers.NUMBERED);
        Map<Integer, String> claim = Map.of(1, "'5000'", 2, "'bench'", 3, KEY, 4, "'\\xabcd'", 5, TOKEN,
                6, "30000", 7, "86400000");
        Map<Integer, String> complete = Map.of(1, "86400000", 2, "201", 3, HEADERS, 4, BODY, 5, "'bench'", 6, KEY,
                7, TOKEN);
        Map<Integer, String> select = Map.of(1, "'bench'", 2, KEY);
        String completion = numbered(text.complete(false), complete);
        // Key last's insert, as the JDBC store sends it: one statement that sets the bound, inserts, restores it.
        Map<Integer, String> completed = Map.of(1, "'bench'", 2, KEY, 3, "'\\xabcd'", 4, TOKEN, 5, "86400000",
                6, "201", 7, HEADERS, 8, BODY, 9, "'5000'");
        List<String> keyLastInsert = List.of(numbered(text.insertCompleted(), completed));
        String t = "statement_timestamp()";
        // The hand-written probe's insert: the completed record alone, without the bound.
        String insert = "INSERT INTO " + TABLE + " (scope, idem_key, fingerprint, status, owner_token, attempt,"
                + " created_at, lease_expires_at, completed_at, expires_at, response_status, response_headers,"
                + " response_body) VALUES ('bench', " + KEY + ", '\\xabcd', 'COMPLETED', " + TOKEN + ", 1, " + t + ", "
                + t + ", " + t + ", " + t + " + interval '1 day', 201, " + HEADERS + ", " + BODY + ")";
        String plainInsertInProgress = "INSERT INTO " + TABLE + " (scope, idem_key, fingerprint, status, owner_token,"
                + " attempt, created_at, lease_expires_at, expires_at) VALUES ('bench', " + KEY + ", '\\xabcd', "
                + "'IN_PROGRESS', " + TOKEN + ", 1, statement_timestamp(), statement_timestamp() + interval '30 s',"
                + " statement_timestamp() + interval '1 day')";
        Map<String, List<String>> bodies = new LinkedHashMap<>();
        List<String> keyFirst = new ArrayList<>(List.of("BEGIN"));
        keyFirst.addAll(statements(numbered(text.claimStatements(), claim)));
        keyFirst.addAll(List.of(completion, "COMMIT"));
        bodies.put("key_first", keyFirst);
        bodies.put("key_first_floor", List.of("BEGIN", "SELECT 1", plainInsertInProgress, "SELECT 1", completion, "COMMIT"));
        List<String> keyLast = new ArrayList<>(List.of("BEGIN", numbered(text.select(), select)));
        keyLast.addAll(keyLastInsert);
        keyLast.add("COMMIT");
        bodies.put("key_last", keyLast);
        // Key last without a look-up: the work (SELECT 1 here), then the plain insert in the bound; joined to a
        // caller's transaction or asynchronous, the insert that also takes over.
        List<String> noLookup = new ArrayList<>(List.of("BEGIN", "SELECT 1"));
        noLookup.addAll(keyLastInsert);
        noLookup.add("COMMIT");
        bodies.put("key_last_no_lookup", noLookup);
        bodies.put("key_last_no_lookup_joined", List.of("BEGIN", "SELECT 1",
                numbered(text.insertCompletedOrTakeOver(), completed), "COMMIT"));
        // Investigation only: the same decision as two plain statements, a takeover in place, then an insert
        // unless the takeover wrote the record (a key another attempt committed then fails on the primary key).
        String takeOverInPlace = "UPDATE " + TABLE + " AS r SET status = 'COMPLETED', owner_token = " + TOKEN
                + ", attempt = CASE WHEN r.expires_at <= " + t + " THEN 1 ELSE r.attempt + 1 END, created_at = CASE"
                + " WHEN r.expires_at <= " + t + " THEN " + t + " ELSE r.created_at END, lease_expires_at = " + t
                + ", completed_at = " + t + ", expires_at = " + t + " + interval '1 day', response_status = 201,"
                + " response_headers = " + HEADERS + ", response_body = " + BODY + " WHERE r.scope = 'bench' AND"
                + " r.idem_key = " + KEY + " AND (r.expires_at <= " + t + " OR (r.fingerprint = '\\xabcd' AND"
                + " (r.status = 'FAILED' OR (r.status = 'IN_PROGRESS' AND r.lease_expires_at <= " + t + "))))";
        String insertUnlessTaken = insert.replace(" VALUES (", " SELECT ").replaceFirst("\\)$", "")
                + " WHERE NOT EXISTS (SELECT 1 FROM " + TABLE + " d WHERE d.scope = 'bench' AND d.idem_key = " + KEY
                + " AND d.owner_token = " + TOKEN + ")";
        bodies.put("key_last_update_insert", List.of("BEGIN", "SELECT 1", numbered(text.setLockTimeout(), claim),
                takeOverInPlace, insertUnlessTaken, PostgresSqlText.RESTORE_LOCK_TIMEOUT, "COMMIT"));
        bodies.put("insert_last", List.of("BEGIN", "SELECT 1", insert, "COMMIT"));
        bodies.put("nothing", List.of("BEGIN", "SELECT 1", "COMMIT"));
        return bodies;
    }

    /** A pgbench script per transaction, each statement on a line of its own. */
    private static Map<String, Path> write(Path dir, Map<String, List<String>> transactions) throws IOException {
        Map<String, Path> scripts = new LinkedHashMap<>();
        for (Map.Entry<String, List<String>> e : transactions.entrySet()) {
            Path file = dir.resolve(e.getKey() + ".sql");
            // Two numbers for a key: one in 2 billion collides within a run's 100,000 keys.
            String script = "\\set n random(1, 2000000000)\n\\set m random(1, 2000000000)\n"
                    + String.join(";\n", e.getValue()) + ";\n";
            Files.writeString(file, script, StandardCharsets.UTF_8);
            scripts.put(e.getKey(), file);
        }
        return scripts;
    }

    private static String numbered(String sql, Map<Integer, String> values) {
        Matcher m = NUMBERED.matcher(sql);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String value = values.get(Integer.parseInt(m.group(1)));
            if (value == null) {
                throw new IllegalStateException("no value for $" + m.group(1) + " in " + sql);
            }
            m.appendReplacement(out, Matcher.quoteReplacement(value + "::" + m.group(2)));
        }
        return m.appendTail(out).toString();
    }

    private static List<String> statements(String sql) {
        return Arrays.stream(sql.split(";")).map(String::strip).toList();
    }

    /** One run: each script's statements and their mean latency in microseconds. */
    private static Map<String, List<Double>> pgbench(Matcher url, Map<String, Path> scripts, int seconds)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("pgbench", "-h", url.group(1), "-p",
                url.group(2) == null ? "5432" : url.group(2), "-U", TestDatabases.postgresUser(), "-n", "-M", "prepared",
                "-r", "--random-seed=rand", "-c", "1", "-T", Integer.toString(seconds)));
        scripts.values().forEach(s -> command.addAll(List.of("-f", s.toString())));
        command.add(url.group(3));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("PGPASSWORD", TestDatabases.postgresPassword());
        Process process = builder.start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (process.waitFor() != 0 || output.contains("aborted")) {
            throw new IllegalStateException("pgbench failed:\n" + output);
        }
        Map<String, List<Double>> latencies = new LinkedHashMap<>();
        List<Double> current = null;
        for (String line : output.split("\n")) {
            Matcher script = SCRIPT.matcher(line);
            if (script.find()) {
                String name = Path.of(script.group(1)).getFileName().toString().replace(".sql", "");
                current = new ArrayList<>();
                latencies.put(name, current);
                continue;
            }
            Matcher latency = LATENCY.matcher(line);
            if (current != null && latency.matches() && !latency.group(2).startsWith("\\set")) {
                current.add(Double.parseDouble(latency.group(1)) * 1000);
            }
        }
        return latencies;
    }

    /**
     * Per statement: its latency and its time in the server (less {@code SELECT 1}'s latency in the same
     * run), the median of the runs and their range, in microseconds.
     */
    private static void report(Map<String, List<String>> transactions, List<Map<String, List<Double>>> runs) {
        System.out.printf(Locale.ROOT, "%n| transaction | statement | latency µs | in the server µs |%n| --- | --- | ---: | ---: |%n");
        for (Map.Entry<String, List<String>> e : transactions.entrySet()) {
            String script = e.getKey();
            List<String> lines = e.getValue();
            for (int i = 0; i < lines.size(); i++) {
                double[] latency = new double[runs.size()];
                double[] server = new double[runs.size()];
                for (int r = 0; r < runs.size(); r++) {
                    latency[r] = runs.get(r).get(script).get(i);
                    server[r] = latency[r] - runs.get(r).get("nothing").get(1); // SELECT 1
                }
                String statement = lines.get(i).length() > 60 ? lines.get(i).substring(0, 60) + "…" : lines.get(i);
                System.out.printf(Locale.ROOT, "| %s | `%s` | %s | %s |%n", script, statement,
                        spread(latency), spread(server));
            }
        }
    }

    private static String spread(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return String.format(Locale.ROOT, "%.0f (%.0f–%.0f)", sorted[sorted.length / 2], sorted[0],
                sorted[sorted.length - 1]);
    }
}
