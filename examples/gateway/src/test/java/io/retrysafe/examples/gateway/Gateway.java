package io.retrysafe.examples.gateway;

import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestDynamo;
import io.retrysafe.testservices.TestRedis;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The gateway as a child JVM, started from its runnable jar with the example's own {@code gateway.yaml}
 * and {@code users.txt}, changed only where a test must: the upstream's port, the test store, a short lease.
 */
final class Gateway implements AutoCloseable {
    /** The runnable jar, which the build makes in retrysafe-gateway's package phase (pom.xml names it). */
    static final Path JAR = Path.of(System.getProperty("retrysafe.gateway.jar",
            "../../retrysafe-gateway/target/retrysafe-gateway.jar")).toAbsolutePath().normalize();
    static final Path CONFIG = Path.of("gateway.yaml").toAbsolutePath();
    static final Path USERS = Path.of("users.txt").toAbsolutePath();
    /** gateway.yaml's idempotency.max-request-bytes. */
    static final long MAX_REQUEST_BYTES = 65_536;
    /** The lease in tests: a request whose gateway or upstream died holds its key this long. */
    static final Duration LEASE = Duration.ofSeconds(3);
    static final Duration READY_BOUND = Duration.ofSeconds(60);

    /**
     * Where the gateway keeps its keys: the test databases, each under the example's default table; Redis;
     * or the DynamoDB test server, in a table of the gateway's own that {@link #close()} deletes.
     */
    enum Store {
        POSTGRESQL, MARIADB, REDIS, DYNAMODB;

        /** The password {@code password-env: GATEWAY_STORE_PASSWORD} names; none for Redis or DynamoDB. */
        String password() {
            return switch (this) {
                case POSTGRESQL -> TestDatabases.postgresPassword();
                case MARIADB -> TestDatabases.mariadbPassword();
                case REDIS, DYNAMODB -> "";
            };
        }

        /**
         * The gateway's environment. A dynamodb store takes its region and credentials from the AWS SDK's
         * environment, as a deployed gateway does; the test server checks neither.
         */
        Map<String, String> environment() {
            return this == DYNAMODB
                    ? Map.of("AWS_REGION", "us-east-1", "AWS_ACCESS_KEY_ID", "test", "AWS_SECRET_ACCESS_KEY", "test")
                    : Map.of("GATEWAY_STORE_PASSWORD", password());
        }
    }

    private static final Pattern READY = Pattern.compile("retrysafe-gateway listening on port (\\d+)");

    private final Path dir;
    private final Path config;
    private final Store store;
    /** The DynamoDB server and table the gateway's keys are in, to delete on close; null for other stores. */
    private final String dynamoUrl;
    private final String dynamoTable;
    private ChildProcess process;
    private int port;

    private Gateway(Path dir, Path config, Store store, String dynamoUrl, String dynamoTable) {
        this.dir = dir;
        this.config = config;
        this.store = store;
        this.dynamoUrl = dynamoUrl;
        this.dynamoTable = dynamoTable;
    }

    static Gateway start(Path dir, Upstream upstream, Store store) throws IOException, InterruptedException {
        Path config = dir.resolve("gateway-" + store.name().toLowerCase() + ".yaml");
        // The server first: none reachable aborts the class here (or fails it under CI=true).
        String dynamoUrl = store == Store.DYNAMODB ? TestDynamo.url() : null;
        String dynamoTable = store == Store.DYNAMODB ? TestDynamo.uniqueTableName("gw-example") : null;
        Files.writeString(config, config(upstream, store, dynamoUrl, dynamoTable), StandardCharsets.UTF_8);
        Gateway gateway = new Gateway(dir, config, store, dynamoUrl, dynamoTable);
        gateway.launch(0);
        return gateway;
    }

    /** The example's gateway.yaml, with what a test must change; every change must apply. */
    static String config(Upstream upstream, Store store, String dynamoUrl, String dynamoTable) throws IOException {
        String yaml = Files.readString(CONFIG, StandardCharsets.UTF_8);
        yaml = replace(yaml, "url: http://127.0.0.1:8081", "url: " + upstream.uri());
        yaml = replace(yaml, "users-file: users.txt", "users-file: " + USERS);
        yaml = replace(yaml, "lease: 30s", "lease: " + LEASE.toSeconds() + "s");
        String pgStore = """
                  type: postgresql
                  url: jdbc:postgresql://127.0.0.1:5432/postgres
                  username: postgres
                """;
        String testStore = switch (store) {
            case POSTGRESQL -> jdbc("postgresql", TestDatabases.postgresJdbcUrl(), TestDatabases.postgresUser(), store);
            case MARIADB -> jdbc("mariadb", TestDatabases.mariadbJdbcUrl(), TestDatabases.mariadbUser(), store);
            case REDIS -> "  type: redis\n  url: " + TestRedis.standaloneUri().toURI() + "\n  key-prefix: \"gw-example-" + UUID.randomUUID()
                    + ":\"\n";
            // create-schema, kept from gateway.yaml, creates the table.
            case DYNAMODB -> "  type: dynamodb\n  url: " + dynamoUrl + "\n  table: " + dynamoTable + "\n";
        };
        yaml = replace(yaml, pgStore, testStore);
        if (store == Store.REDIS) {
            yaml = replace(yaml, "  create-schema: true", "");
        }
        return yaml;
    }

    private static String jdbc(String type, String url, String user, Store store) {
        return "  type: " + type + "\n  url: " + url + "\n  username: " + user + "\n"
                + (store.password().isEmpty() ? "" : "  password-env: GATEWAY_STORE_PASSWORD\n");
    }

    private static String replace(String yaml, String what, String with) {
        if (!yaml.contains(what)) {
            throw new AssertionError(CONFIG + " no longer contains \"" + what + "\"; the test's changes need updating");
        }
        return yaml.replace(what, with);
    }

    private void launch(int onPort) throws IOException, InterruptedException {
        process = ChildProcess.start("gateway", dir, List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "-XX:TieredStopAtLevel=1", "-Xmx256m", "-jar", JAR.toString(), "--config", config.toString()),
                env(onPort), READY);
        port = process.awaitReady(READY_BOUND);
    }

    private Map<String, String> env(int onPort) {
        Map<String, String> env = new HashMap<>(store.environment());
        env.putAll(Map.of("PORT", Integer.toString(onPort), "ADMIN_PORT", "0"));
        return env;
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + port);
    }

    long maxRequestBytes() {
        return MAX_REQUEST_BYTES;
    }

    /** SIGKILL: nothing it held in memory survives, requests in flight get no answer. */
    void kill() throws InterruptedException {
        process.kill();
    }

    void stop() throws InterruptedException {
        process.close();
    }

    /** Starts it again on the same port, configuration and store. */
    void restart() throws IOException, InterruptedException {
        if (process.isAlive()) {
            process.close();
        }
        launch(port);
    }

    @Override
    public void close() throws InterruptedException {
        try {
            process.close();
        } finally {
            if (dynamoTable != null) {
                TestDynamo.deleteTable(dynamoUrl, dynamoTable);
            }
        }
    }
}
