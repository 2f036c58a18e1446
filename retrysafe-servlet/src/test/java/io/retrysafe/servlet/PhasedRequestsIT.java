package io.retrysafe.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.KeyRules;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StepCodec;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.Admission;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcPhaseJournal;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link PhasedRequests} in a real Tomcat, on PostgreSQL: a servlet whose work is a phased operation gets the
 * filter's answers for the filter's inputs (keys, callers, bodies), and its operation runs once per caller and key.
 */
class PhasedRequestsIT {
    private static final String TABLE = "rs_servlet_phased_it";
    private static final String ORDERS = "rs_servlet_phased_orders_it";
    private static final HttpRoute ROUTE = HttpRoute.of("POST", "/orders").keyRequired(true).jsonMembers("/item")
            .build();
    private static final AtomicInteger RUNS = new AtomicInteger();

    @TempDir
    static Path dir;

    private static EmbeddedTomcat tomcat;
    private static HttpClient http;
    private static JdbcIdempotencyStore store;

    /** The operation's answer: 201 with the order's JSON, stored and replayed as it is. */
    private static final ResponseCodec<String> CREATED = new ResponseCodec<>() {
        @Override
        public StoredResponse encode(String order) {
            return StoredResponse.of(201, Map.of("Content-Type", List.of("application/json")),
                    order.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String decode(StoredResponse stored) {
            return new String(stored.body(), StandardCharsets.UTF_8);
        }
    };

    private static final PhasedOperation<String, String, Connection> ORDER = PhasedOperation.of("order",
            StepCodec.utf8(), CREATED, (body, phases) -> phases.local("insert", StepCodec.utf8(), c -> {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + ORDERS + " (body) VALUES (?)")) {
                    ps.setString(1, body);
                    ps.executeUpdate();
                }
                return "{\"run\":" + RUNS.incrementAndGet() + "}";
            }));

    @BeforeAll
    static void start() throws Exception {
        store = JdbcIdempotencyStore.builder(TestDatabases.postgres()).table(TABLE).build();
        store.createSchema();
        try (Connection c = TestDatabases.postgres().getConnection(); Statement st = c.createStatement()) {
            st.execute("CREATE TABLE IF NOT EXISTS " + ORDERS + " (body text NOT NULL)");
        }
        PhasedRetrySafe<Connection> phased = PhasedRetrySafe.builder(RetrySafe.builder(store).name("phased-it").build(),
                JdbcPhaseJournal.of(store)).build();
        PhasedRequests<Connection> orders = PhasedRequests.of(phased, ROUTE, KeyRules.DEFAULT,
                ScopeResolver.header("X-User"));
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10))
                .build();
        tomcat = EmbeddedTomcat.start(dir, context -> EmbeddedTomcat.servlet(context, "orders", new HttpServlet() {
            @Override
            protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
                byte[] body = request.getInputStream().readAllBytes();
                Admission admission = orders.admit(request, body);
                HttpAnswer answer = admission instanceof Admission.Admitted admitted
                        ? orders.execute(admitted, ORDER, new String(body, StandardCharsets.UTF_8))
                        : ((Admission.Refused) admission).answer();
                PhasedRequests.send(response, answer);
            }
        }, "/orders"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (tomcat != null) {
            tomcat.close();
        }
        try (Connection c = TestDatabases.postgres().getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS " + ORDERS);
            st.execute("DROP TABLE IF EXISTS " + TABLE);
        }
    }

    private static HttpResponse<String> post(String user, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(tomcat.uri("/orders"))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (user != null) {
            b.header("X-User", user);
        }
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static long orders(String body) throws SQLException {
        try (Connection c = TestDatabases.postgres().getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + ORDERS + " WHERE body = ?")) {
            ps.setString(1, body);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    @Test
    void theOperationRunsOncePerCallerAndKeyAndItsAnswerIsReplayed() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = "{\"item\":\"" + UUID.randomUUID() + "\"}";

        HttpResponse<String> first = post("alice", key, body);
        HttpResponse<String> retry = post("alice", key, body.replace(":", ": "));
        HttpResponse<String> bob = post("bob", key, body);

        assertThat(first.statusCode()).as(first.body()).isEqualTo(201);
        assertThat(first.headers().firstValue("Content-Type")).hasValue("application/json");
        assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.body()).as("the same answer, the body re-serialised").isEqualTo(first.body());
        assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.body()).as("another caller's key of the same value is another intent").isNotEqualTo(first.body());
        assertThat(orders(body)).as("orders: alice's and bob's").isEqualTo(2);
    }

    @Test
    void theFiltersRefusalsComeBeforeAnythingRuns() throws Exception {
        String key = UUID.randomUUID().toString();
        String body = "{\"item\":\"" + UUID.randomUUID() + "\"}";
        assertThat(post("alice", key, body).statusCode()).isEqualTo(201);

        HttpResponse<String> reused = post("alice", key, "{\"item\":\"another\"}");
        HttpResponse<String> noKey = post("alice", null, body);
        HttpResponse<String> badKey = post("alice", "k".repeat(300), body);
        HttpResponse<String> noCaller = post(null, UUID.randomUUID().toString(), body);
        HttpResponse<String> notJson = post("alice", UUID.randomUUID().toString(), "{\"item\":");

        assertThat(reused.statusCode()).isEqualTo(422);
        assertThat(reused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(noKey.statusCode()).isEqualTo(400);
        assertThat(noKey.body()).contains("\"type\":\"/problems/");
        assertThat(badKey.statusCode()).isEqualTo(400);
        assertThat(noCaller.statusCode()).isEqualTo(401);
        assertThat(notJson.statusCode()).isEqualTo(400);
        assertThat(notJson.body()).contains("\"type\":\"/problems/");
        assertThat(orders(body)).as("orders of the refused requests' body: only the first").isEqualTo(1);
        assertThat(orders("{\"item\":\"another\"}")).isZero();
    }
}
