package io.retrysafe.examples.paymentsservice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The service on the context that Spring's AOT processing generated at build time ({@code process-aot}),
 * started with {@code -Dspring.aot.enabled=true}: RetrySafe's filter and {@code @Idempotent} work there
 * as they do on a context built at run time. The processing ran with no database URL, so this context
 * holds the embedded default.
 */
class AotIT {
    private static final Duration START = Duration.ofSeconds(180);
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @TempDir
    Path dir;

    @Test
    void theAotProcessedServicePaysOnceReplaysAndRefusesAnotherRequestUnderTheSameKey() throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put("RETRYSAFE_JDBC_URL", null);
        env.put("SPRING_DATASOURCE_URL", null);
        try (ServiceProcess service = ServiceProcess.start(dir, "aot", env, List.of(),
                System.getProperty("java.class.path"), List.of("-Dspring.aot.enabled=true"))) {
            int port = service.awaitReady(START);
            // Spring Boot says so when it runs the generated context instead of building one.
            assertThat(service.log()).contains("Starting AOT-processed PaymentsServiceApplication");

            String key = UUID.randomUUID().toString();
            HttpResponse<String> first = send(ServiceProcess.payment(port, key, "acc-1", 700));
            assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
            assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();

            HttpResponse<String> replay = send(ServiceProcess.payment(port, key, "acc-1", 700));
            assertThat(replay.statusCode()).isEqualTo(201);
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(replay.body()).isEqualTo(first.body());

            HttpResponse<String> other = send(ServiceProcess.payment(port, key, "acc-1", 900));
            assertThat(other.statusCode()).as(other.body()).isEqualTo(422);
            assertThat(other.headers().firstValue("Content-Type")).hasValue("application/problem+json");

            // @Idempotent (natural key): the advisor and its JSON-stored result on the generated context.
            String order = "/orders/aot-" + UUID.randomUUID() + "/payment";
            HttpResponse<String> paid = send(orderPayment(port, order, 300));
            HttpResponse<String> again = send(orderPayment(port, order, 300));
            HttpResponse<String> otherAmount = send(orderPayment(port, order, 400));
            assertThat(paid.statusCode()).as(paid.body()).isEqualTo(200);
            assertThat(again.statusCode()).isEqualTo(200);
            assertThat(again.body()).isEqualTo(paid.body());
            assertThat(otherAmount.statusCode()).as(otherAmount.body()).isEqualTo(422);
        }
    }

    /**
     * What a native image of the service would be built with: the starter's resource hints are in it.
     * Spring Framework 7 (Boot 4) writes them as globs in reachability-metadata.json, Spring Framework
     * 6.2 (Boot 3.5) as patterns in resource-config.json, each under the module's artifact id.
     */
    @Test
    void theGeneratedNativeImageMetadataIncludesTheStoresSchemasAndScripts() throws Exception {
        String globs = metadata("reachability-metadata.json");
        if (globs != null) {
            assertThat(globs).contains("\"io/retrysafe/jdbc/*.sql\"", "\"io/retrysafe/redis/*.lua\"");
            return;
        }
        String patterns = metadata("resource-config.json");
        assertThat(patterns).as("process-aot's output").isNotNull();
        assertThat(patterns.replace("\\\\", "\\")).contains("\\Qio/retrysafe/jdbc/\\E.*\\Q.sql\\E",
                "\\Qio/retrysafe/redis/\\E.*\\Q.lua\\E");
    }

    /** One of process-aot's files for this module, '/' unescaped; null when it did not write it. */
    private String metadata(String file) throws Exception {
        for (String module : List.of("retrysafe-payments-service", "retrysafe-payments-service-boot3")) {
            try (InputStream in = getClass().getResourceAsStream(
                    "/META-INF/native-image/io.retrysafe/" + module + "/" + file)) {
                if (in != null) {
                    // The JSON may escape '/' as "\/".
                    return new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("\\/", "/");
                }
            }
        }
        return null;
    }

    private HttpResponse<String> send(HttpRequest request) throws Exception {
        return http.send(request, HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest orderPayment(int port, String path, long amount) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).timeout(Duration.ofSeconds(60))
                .header("Authorization", ServiceITSupport.basic(ServiceITSupport.ALICE))
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(ServiceITSupport.payment("acc-1", amount))).build();
    }
}
