package io.retrysafe.examples.paymentsservice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.jupiter.api.io.TempDir;

/**
 * Without {@code RETRYSAFE_JDBC_URL} or {@code spring.datasource.url} the service starts an embedded
 * PostgreSQL and serves: as the user running the test, and, when that user is root (as in CI), also as
 * an unprivileged one, the two ways README's first command is run.
 */
class EmbeddedDefaultIT {
    private static final Duration START = Duration.ofSeconds(180);
    private static final String UNPRIVILEGED_USER = "nobody";
    private static final String UNPRIVILEGED_GROUP = "nogroup";

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @TempDir
    Path dir;

    @Test
    void withoutADatabaseUrlItServesOnAnEmbeddedPostgresAsTheCurrentUser() throws Exception {
        try (ServiceProcess service = ServiceProcess.start(dir, "embedded", withoutDatabaseUrl())) {
            assertServes(service, System.getProperty("user.name"));
        }
    }

    /** Only root can become another user; CI runs as root, so there this half is never left out. */
    @Test
    @EnabledIf("rootOrCi")
    void withoutADatabaseUrlItServesOnAnEmbeddedPostgresAsAnUnprivilegedUser() throws Exception {
        assertThat(isRoot()).as("CI runs the tests as root, so that this test can change the user").isTrue();
        Path home = ownedByUnprivilegedUser(Files.createDirectory(dir.resolve("unprivileged")));
        // The JVM's own temporary directory: the embedded server unpacks and keeps its data there.
        Path tmp = ownedByUnprivilegedUser(Files.createDirectory(home.resolve("tmp")));
        Map<String, String> env = withoutDatabaseUrl();
        env.put("HOME", home.toString());
        List<String> setpriv = List.of("setpriv", "--reuid=" + UNPRIVILEGED_USER, "--regid=" + UNPRIVILEGED_GROUP,
                "--clear-groups");
        try (ServiceProcess service = ServiceProcess.start(home, "embedded", env, setpriv, readableClassPath(home),
                List.of("-Djava.io.tmpdir=" + tmp))) {
            assertServes(service, UNPRIVILEGED_USER);
        }
    }

    private void assertServes(ServiceProcess service, String user) throws Exception {
        int port = service.awaitReady(START);
        HttpResponse<String> health = http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + port + "/actuator/health")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).as(service.log()).isEqualTo(200);
        HttpResponse<String> payment = http.send(ServiceProcess.payment(port, UUID.randomUUID().toString(), "acc-1", 100),
                HttpResponse.BodyHandlers.ofString());
        assertThat(payment.statusCode()).as(payment.body()).isEqualTo(201);
        // Spring Boot's first line names the user: "Starting … (… started by <user> in …)".
        assertThat(service.log()).contains("started by " + user + " in", "started an embedded PostgreSQL");
    }

    private static Map<String, String> withoutDatabaseUrl() {
        Map<String, String> env = new HashMap<>();
        env.put("RETRYSAFE_JDBC_URL", null);
        env.put("SPRING_DATASOURCE_URL", null);
        return env;
    }

    /** The test's class path copied where the unprivileged user can read it (the Maven repository may be root's alone). */
    private String readableClassPath(Path home) throws IOException {
        // The test's directory is root's; the unprivileged user needs to pass through it.
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        Path target = Files.createDirectory(home.resolve("classpath"));
        List<String> entries = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path source = Path.of(entry);
            if (!Files.exists(source)) {
                continue;
            }
            Path copy = target.resolve(entries.size() + "-" + source.getFileName());
            if (Files.isDirectory(source)) {
                try (Stream<Path> tree = Files.walk(source)) {
                    for (Path p : (Iterable<Path>) tree::iterator) {
                        Files.copy(p, copy.resolve(source.relativize(p).toString()));
                    }
                }
            } else {
                Files.copy(source, copy);
            }
            entries.add(copy.toString());
        }
        return String.join(File.pathSeparator, entries);
    }

    private static Path ownedByUnprivilegedUser(Path path) throws IOException {
        UserPrincipalLookupService users = path.getFileSystem().getUserPrincipalLookupService();
        PosixFileAttributeView view = Files.getFileAttributeView(path, PosixFileAttributeView.class);
        view.setOwner(users.lookupPrincipalByName(UNPRIVILEGED_USER));
        view.setGroup(users.lookupPrincipalByGroupName(UNPRIVILEGED_GROUP));
        return path;
    }

    static boolean rootOrCi() throws IOException {
        return isRoot() || "true".equals(System.getenv("CI"));
    }

    private static boolean isRoot() throws IOException {
        // On Linux /proc/self belongs to the process's effective user.
        return Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
    }
}
