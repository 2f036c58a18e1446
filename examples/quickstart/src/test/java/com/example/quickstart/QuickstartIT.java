package com.example.quickstart;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.testservices.TestDatabases;
import java.io.IOException;
import java.net.URI;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The README's first curl calls against the quick start as it ships (its application.yml), in Tomcat
 * on a real PostgreSQL: 201, the retry replayed, the key reused with another body refused.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class QuickstartIT {

    /**
     * A schema of this run's own: Flyway migrates only an empty schema (or one it already manages), and
     * the test database is shared with other tests' tables.
     */
    static final String SCHEMA = "quickstart_" + Long.toHexString(System.nanoTime());

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", () -> {
            String url = TestDatabases.postgresJdbcUrl();
            return url + (url.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA;
        });
        registry.add("spring.datasource.username", TestDatabases::postgresUser);
        registry.add("spring.datasource.password", TestDatabases::postgresPassword);
        registry.add("spring.flyway.schemas", () -> SCHEMA);
    }

    @AfterAll
    static void dropSchema() throws SQLException {
        try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
        }
    }

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @Test
    void aRetryIsReplayedAndTheKeyWithAnotherBodyIsRefused() throws Exception {
        String key = UUID.randomUUID().toString();

        HttpResponse<String> first = pay("acme", key, "{\"account\":\"A-1\",\"amountCents\":1250}");
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).contains("\"account\":\"A-1\"").contains("\"amountCents\":1250");
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();

        HttpResponse<String> retry = pay("acme", key, "{\"account\":\"A-1\",\"amountCents\":1250}");
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(retry.body()).as("the same payment, not a second one").isEqualTo(first.body());

        HttpResponse<String> reused = pay("acme", key, "{\"account\":\"A-1\",\"amountCents\":9900}");
        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValueSatisfying(
                type -> assertThat(type).startsWith("application/problem+json"));
    }

    @Test
    void anotherTenantsSameKeyIsItsOwn() throws Exception {
        String key = UUID.randomUUID().toString();

        HttpResponse<String> acme = pay("acme", key, "{\"account\":\"A-1\",\"amountCents\":1250}");
        HttpResponse<String> globex = pay("globex", key, "{\"account\":\"G-7\",\"amountCents\":300}");

        assertThat(acme.statusCode()).isEqualTo(201);
        assertThat(globex.statusCode()).isEqualTo(201);
        assertThat(globex.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(globex.body()).contains("\"account\":\"G-7\"");
    }

    @Test
    void withoutAKeyThePaymentIsRefused() throws Exception {
        HttpResponse<String> response = pay("acme", null, "{\"account\":\"A-1\",\"amountCents\":1250}");

        assertThat(response.statusCode()).isEqualTo(400);
    }

    @Test
    void theRecordsTableIsTheShippedMigrations() {
        // Flyway ran RetrySafe's migration from the location application.yml adds: no initialize-schema.
        assertThat(jdbc.queryForObject("SELECT count(*) FROM flyway_schema_history WHERE script = ? AND success",
                Integer.class, "R__retrysafe_record.sql")).isPositive();
        assertThat(jdbc.queryForObject("SELECT to_regclass('retrysafe_record') IS NOT NULL", Boolean.class)).isTrue();
    }

    /** The README's curl call; {@code key} null sends none. */
    private HttpResponse<String> pay(String tenant, String key, String json) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/payments"))
                .header("Content-Type", "application/json").header("X-Tenant-Id", tenant)
                .POST(HttpRequest.BodyPublishers.ofString(json));
        if (key != null) {
            request.header("Idempotency-Key", key);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
