package io.retrysafe.examples.paymentsservice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Without {@code RETRYSAFE_JDBC_URL} or {@code spring.datasource.url} the service starts an embedded
 * PostgreSQL; as root, where PostgreSQL refuses to run, it says so and exits 2. Which of the two this
 * test checks depends on the user running it.
 */
class EmbeddedDefaultIT {

    @TempDir
    Path dir;

    @Test
    void withoutADatabaseUrlItStartsAnEmbeddedPostgresOrSaysWhyNot() throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put("RETRYSAFE_JDBC_URL", null);
        env.put("SPRING_DATASOURCE_URL", null);
        try (ServiceProcess service = ServiceProcess.start(dir, "embedded", env)) {
            if (isRoot()) {
                assertThat(service.awaitExit(Duration.ofSeconds(120)))
                        .isEqualTo(PaymentsServiceApplication.EXIT_RUNNING_AS_ROOT);
                assertThat(service.log()).contains("APPLICATION FAILED TO START", "PostgreSQL refuses to run as root",
                        "RETRYSAFE_JDBC_URL").doesNotContain("Exception");
            } else {
                int port = service.awaitReady(Duration.ofSeconds(180));
                HttpResponse<String> health = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + port + "/actuator/health")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(health.statusCode()).isEqualTo(200);
                assertThat(service.log()).contains("started an embedded PostgreSQL");
            }
        }
    }

    private static boolean isRoot() throws IOException {
        return Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
    }
}
