package io.retrysafe.examples.payments;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import javax.sql.DataSource;

/**
 * Starts the payments example. With {@code RETRYSAFE_JDBC_URL} it uses that PostgreSQL server;
 * otherwise it starts an embedded one from a Maven artifact, so nothing needs installing.
 *
 * <pre>
 * ./mvnw -q -pl examples/payments-demo -am package -DskipTests exec:java                 # serve on :8080
 * ./mvnw -q -pl examples/payments-demo -am package -DskipTests exec:java -Dexec.args=--tour   # scripted tour, then exit
 * </pre>
 */
public final class PaymentsDemo {

    private PaymentsDemo() {
    }

    public static void main(String[] args) throws Exception {
        boolean tour = List.of(args).contains("--tour");
        int port = tour ? 0 : Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
        EmbeddedPostgres embedded = null;
        HikariDataSource dataSource;
        String url = System.getenv("RETRYSAFE_JDBC_URL");
        if (url != null) {
            dataSource = pool(url, System.getenv().getOrDefault("RETRYSAFE_JDBC_USER", "postgres"),
                    System.getenv().getOrDefault("RETRYSAFE_JDBC_PASSWORD", ""));
            System.out.println("Using PostgreSQL at " + url);
        } else {
            embedded = EmbeddedPostgres.builder().start();
            dataSource = pool(embedded.getJdbcUrl("postgres", "postgres"), "postgres", "");
            System.out.println("Using an embedded PostgreSQL on port " + embedded.getPort());
        }
        PaymentsService service = new PaymentsService(dataSource, port).start();
        String base = "http://127.0.0.1:" + service.port();
        if (tour) {
            try {
                tour(base);
            } finally {
                service.close();
                dataSource.close();
                if (embedded != null) {
                    embedded.close();
                }
            }
            return;
        }
        System.out.println("Payments service on " + base + "  (Ctrl-C to stop). Try:");
        System.out.println("  curl -i -X POST " + base + "/payments -H 'X-User: alice' -H 'Idempotency-Key: "
                + UUID.randomUUID() + "' -H 'Content-Type: application/json' -d '{\"account\":\"acc-1\",\"amount\":100}'");
        System.out.println("  (run it again: the same 201 comes back with Idempotent-Replayed: true, and no second payment)");
        System.out.println("  curl -i " + base + "/accounts/acc-1");
        EmbeddedPostgres toClose = embedded;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            service.close();
            dataSource.close();
            if (toClose != null) {
                try {
                    toClose.close();
                } catch (Exception ignored) {
                    // exiting anyway
                }
            }
        }));
        new CountDownLatch(1).await();
    }

    private static HikariDataSource pool(String url, String user, String password) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(20);
        config.setPoolName("payments-demo");
        return new HikariDataSource(config);
    }

    /** A client's-eye tour of the guarantee: each step prints the request and the answer. */
    static void tour(String base) throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        String key = UUID.randomUUID().toString();
        String body = "{\"account\":\"acc-1\",\"amount\":100}";
        step(http, "1. first request", post(base, "alice", key, body));
        step(http, "2. the client retries (timeout, proxy): replayed, not charged again", post(base, "alice", key, body));
        step(http, "3. same key, different body: refused", post(base, "alice", key, "{\"account\":\"acc-1\",\"amount\":999}"));
        step(http, "4. no key: refused", HttpRequest.newBuilder(URI.create(base + "/payments")).header("X-User", "alice")
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build());
        step(http, "5. another user with alice's key: a different intent, runs", post(base, "bob", key, body));
        step(http, "6. insufficient funds: the refusal is stored and replayed",
                post(base, "alice", "k-" + key, "{\"account\":\"acc-3\",\"amount\":100000}"));
        String storm = UUID.randomUUID().toString();
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            answers.add(http.sendAsync(post(base, "carol", storm, "{\"account\":\"acc-2\",\"amount\":7}"),
                    HttpResponse.BodyHandlers.ofString()));
        }
        List<Integer> statuses = new ArrayList<>();
        for (CompletableFuture<HttpResponse<String>> a : answers) {
            HttpResponse<String> r = a.join();
            statuses.add(r.statusCode() * 10 + (r.headers().firstValue("Idempotent-Replayed").isPresent() ? 1 : 0));
        }
        System.out.println("7. 20 concurrent identical requests: " + statuses.stream().filter(s -> s == 2010).count()
                + " executed, " + statuses.stream().filter(s -> s == 2011).count() + " replayed, "
                + statuses.stream().filter(s -> s / 10 == 409).count() + " told 409 in progress");
        step(http, "8. acc-2 afterwards: the storm moved 7 once", HttpRequest.newBuilder(URI.create(base + "/accounts/acc-2"))
                .GET().build());
    }

    private static HttpRequest post(String base, String user, String key, String body) {
        return HttpRequest.newBuilder(URI.create(base + "/payments")).header("X-User", user)
                .header("Idempotency-Key", key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private static void step(HttpClient http, String title, HttpRequest request) throws Exception {
        HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
        System.out.println(title);
        System.out.println("   " + request.method() + " " + request.uri().getPath() + " -> " + r.statusCode()
                + r.headers().firstValue("Idempotent-Replayed").map(v -> " (Idempotent-Replayed: " + v + ")").orElse("")
                + "  " + r.body());
    }
}
