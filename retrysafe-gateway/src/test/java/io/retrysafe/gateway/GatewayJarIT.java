package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.assertProblem;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runnable jar as an operator starts it: {@code java -jar retrysafe-gateway.jar --config FILE}. */
class GatewayJarIT {
    private static final Path JAR = Path.of(System.getProperty("retrysafe.gateway.jar", "target/retrysafe-gateway.jar"));

    @TempDir
    Path dir;

    private Process start(Path config) throws Exception {
        assertThat(JAR).as("the shaded jar, built in package").exists();
        return new ProcessBuilder(List.of(System.getProperty("java.home") + "/bin/java", "-Xmx128m", "-jar",
                JAR.toString(), "--config", config.toString())).redirectError(dir.resolve("stderr.txt").toFile()).start();
    }

    @Test
    void aBadConfigurationStopsItWithTheLineAndTheReasonAndNoStackTrace() throws Exception {
        Path config = dir.resolve("gateway.yaml");
        Files.writeString(config, "listen:\n  port: 8080\nscope:\n  trusted-header: { name: X-Tenant }\nstore:\n"
                + "  type: cassandra\n");

        Process gateway = start(config);

        assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(gateway.exitValue()).isEqualTo(GatewayMain.CONFIG_ERROR);
        String stderr = Files.readString(dir.resolve("stderr.txt"), UTF_8);
        assertThat(stderr).contains("retrysafe-gateway: configuration error: " + config + ":6:9: store.type must be "
                + "postgresql, mariadb, redis or dynamodb, but was \"cassandra\"");
        assertThat(stderr).doesNotContain("Exception").doesNotContain("\tat ");
    }

    @Test
    void withItsStoreDownItStartsSaysSoOnHealthRefusesKeysAndStopsOnSigterm() throws Exception {
        int redisPort;
        int port;
        try (ServerSocket a = new ServerSocket(0); ServerSocket b = new ServerSocket(0)) {
            redisPort = a.getLocalPort(); // nothing listens there once closed
            port = b.getLocalPort();
        }
        Path config = dir.resolve("gateway.yaml");
        Files.writeString(config, """
                listen: { port: %d }
                admin: { port: 0 }
                upstream: { url: "http://127.0.0.1:%d" }
                scope:
                  trusted-header: { name: X-Tenant }
                store: { type: redis, url: "redis://127.0.0.1:%d" }
                routes:
                  - { method: POST, path: /payments }
                """.formatted(port, redisPort, redisPort));
        Process gateway = start(config);
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(gateway.getInputStream(), UTF_8));
            java.util.regex.Matcher ready = java.util.regex.Pattern.compile("retrysafe-gateway listening on port "
                    + port + " \\(admin: /health and /metrics on port (\\d+)\\)").matcher(out.readLine());
            assertThat(ready.matches()).isTrue();
            GatewayHttp client = new GatewayHttp(port);
            GatewayHttp admin = new GatewayHttp(Integer.parseInt(ready.group(1)));

            HttpResponse<String> health = admin.send(HttpRequest.newBuilder(admin.uri("/health")).GET());
            HttpResponse<String> payment = client.send(client.post("/payments", null, UUID.randomUUID().toString(), "{}")
                    .header("X-Tenant", "acme"));

            assertThat(health.statusCode()).isEqualTo(503);
            assertThat(health.body()).contains("\"status\":\"DOWN\"");
            assertProblem(payment, 503, "/problems/store-unavailable");
            assertThat(payment.headers().firstValue("Retry-After")).isPresent();
            assertThat(out.readLine()).as("the access log").contains("POST /payments 503");
        } finally {
            gateway.destroy();
            assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        assertThat(gateway.exitValue()).isEqualTo(143);
    }
}
