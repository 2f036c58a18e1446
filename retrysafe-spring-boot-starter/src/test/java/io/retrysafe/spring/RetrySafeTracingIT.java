package io.retrysafe.spring;

import static io.retrysafe.spring.InMemoryTracing.DIGEST;
import static io.retrysafe.spring.InMemoryTracing.KIND;
import static io.retrysafe.spring.InMemoryTracing.OUTCOME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.observation.ObservationRegistry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.servlet.HttpIdempotency;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.filter.ServerHttpObservationFilter;

/**
 * The spans an application gets through Micrometer's OpenTelemetry bridge, on a real Tomcat and the
 * real PostgreSQL: one {@code retrysafe.request} span per protected request and per {@link Idempotent}
 * call, its outcome as a tag, the key's digest (the logs' hash) as an attribute, and the raw key in no
 * span at all; the digest is in the MDC while the call runs and gone after it.
 */
@SpringBootTest(classes = RetrySafeTracingIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "retrysafe.http.scope=header",
                "retrysafe.http.scope-header=X-User",
                "retrysafe.http.routes[0].method=POST",
                "retrysafe.http.routes[0].pattern=/things",
                "retrysafe.store.initialize-schema=true",
                InMemoryTracing.WITHOUT_BOOTS_TRACING,
        })
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class RetrySafeTracingIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String RECORDS = "rs_tracing_records_" + SUFFIX;

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        SpringPostgres.register(registry, RECORDS);
    }

    static final InMemoryTracing TRACING = new InMemoryTracing();
    /** Spring's tag of the handler's pattern on its HTTP server spans. */
    private static final AttributeKey<String> URI_TAG = AttributeKey.stringKey("uri");

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        ObservationRegistry observationRegistry() {
            return TRACING.registry();
        }

        /** Spring's observation of each HTTP request, on this registry, as Boot's actuator registers it. */
        @Bean
        FilterRegistrationBean<ServerHttpObservationFilter> httpObservation() {
            FilterRegistrationBean<ServerHttpObservationFilter> registration =
                    new FilterRegistrationBean<>(new ServerHttpObservationFilter(TRACING.registry()));
            registration.setOrder(Ordered.HIGHEST_PRECEDENCE + 1);
            return registration;
        }

        @Bean
        Probe probe() {
            return new Probe();
        }

        @Bean
        Orders orders(Probe probe) {
            return new Orders(probe);
        }

        @Bean
        Controller controller(Orders orders, Probe probe) {
            return new Controller(orders, probe);
        }
    }

    /** The MDC's digest as seen during and after each call, by the key's value. */
    static class Probe {
        final Map<String, String> during = new ConcurrentHashMap<>();
        final Map<String, String> after = new ConcurrentHashMap<>();

        void during(String key) {
            during.put(key, String.valueOf(MDC.get(RetrySafeObservations.KEY_DIGEST)));
        }
    }

    public static class Orders {
        private final Probe probe;

        Orders(Probe probe) {
            this.probe = probe;
        }

        @Idempotent(key = "#orderNumber")
        public String pay(String orderNumber) {
            probe.during(orderNumber);
            return "paid " + orderNumber.length();
        }
    }

    @RestController
    static class Controller {
        private final Orders orders;
        private final Probe probe;

        Controller(Orders orders, Probe probe) {
            this.orders = orders;
            this.probe = probe;
        }

        @PostMapping("/things")
        String create(@RequestHeader(HttpIdempotency.HEADER) String key) {
            probe.during(key);
            return "created";
        }

        /** The order number travels in a header, so that no URL carries the key into an HTTP span. */
        @PostMapping("/orders")
        String pay(@RequestHeader("X-Order") String orderNumber) {
            String paid = orders.pay(orderNumber);
            probe.after.put(orderNumber, String.valueOf(MDC.get(RetrySafeObservations.KEY_DIGEST)));
            return paid;
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    Probe probe;

    private final HttpClient http = HttpClient.newHttpClient();
    private String key;

    @AfterAll
    static void dropTable() throws Exception {
        SpringPostgres.drop(RECORDS);
    }

    @BeforeEach
    void newKey() {
        key = "key-" + UUID.randomUUID();
        TRACING.reset();
    }

    @Test
    void aProtectedRequestIsASpanWithItsOutcomeAndTheKeysDigest() throws Exception {
        assertThat(post("/things", HttpIdempotency.HEADER, key).statusCode()).isEqualTo(200);
        assertThat(post("/things", HttpIdempotency.HEADER, key).statusCode()).isEqualTo(200);

        List<SpanData> spans = retrySafeSpans();
        String digest = IdempotencyKey.of("header:X-User:alice|POST /things", key).digest();
        String name = BootLine.spanName("http POST");
        assertThat(spans).extracting(SpanData::getName).containsExactly(name, name);
        assertThat(spans).extracting(s -> s.getAttributes().get(KIND)).containsOnly("http");
        assertThat(spans).extracting(s -> s.getAttributes().get(OUTCOME)).containsExactly("executed", "replayed");
        assertThat(spans).extracting(s -> s.getAttributes().get(DIGEST)).containsOnly(digest);
        assertThat(probe.during.get(key)).as("the MDC during the handler").isEqualTo(digest);
        assertTheRawKeyIsInNoSpan();
    }

    /**
     * Spring's own span of each request, {@code http.server.requests}, the parent of RetrySafe's: a replay, answered
     * by the filter before Spring MVC matched a handler, carries its route as the first request does, not
     * {@code uri="UNKNOWN"}.
     */
    @Test
    void aReplayIsTaggedWithItsRouteInSpringsHttpSpanAsTheFirstRequestIs() throws Exception {
        assertThat(post("/things", HttpIdempotency.HEADER, key).statusCode()).isEqualTo(200);
        assertThat(post("/things", HttpIdempotency.HEADER, key).headers().firstValue("Idempotent-Replayed"))
                .hasValue("true");

        List<SpanData> ours = retrySafeSpans();
        assertThat(ours).extracting(s -> s.getAttributes().get(OUTCOME)).containsExactly("executed", "replayed");
        // Spring ends a request's span after its answer is sent, so it may finish just after the client read it.
        await().atMost(Duration.ofSeconds(10)).until(() -> ours.stream().allMatch(s -> parentOf(s) != null));
        assertThat(ours).extracting(s -> parentOf(s).getAttributes().get(URI_TAG))
                .containsExactly("/things", "/things");
    }

    @Test
    void anIdempotentCallIsASpanWithItsOutcomeAndTheKeysDigest() throws Exception {
        assertThat(post("/orders", "X-Order", key).statusCode()).isEqualTo(200);
        assertThat(post("/orders", "X-Order", key).statusCode()).isEqualTo(200);

        List<SpanData> spans = retrySafeSpans();
        String operation = Orders.class.getName() + ".pay";
        String digest = IdempotencyKey.of("header:X-User:alice|" + operation, key).digest();
        String name = BootLine.spanName(operation);
        assertThat(spans).extracting(SpanData::getName).containsExactly(name, name);
        assertThat(spans).extracting(s -> s.getAttributes().get(KIND)).containsOnly("method");
        assertThat(spans).extracting(s -> s.getAttributes().get(OUTCOME)).containsExactly("executed", "replayed");
        assertThat(spans).extracting(s -> s.getAttributes().get(DIGEST)).containsOnly(digest);
        assertThat(probe.during.get(key)).as("the MDC during the call").isEqualTo(digest);
        assertThat(probe.after.get(key)).as("the MDC after the call").isEqualTo("null");
        assertTheRawKeyIsInNoSpan();
    }

    @Test
    void aCallWithoutACallerIsASpanOfItsRefusal() throws Exception {
        HttpResponse<String> anonymous = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/orders")).header("X-Order", key).POST(HttpRequest.BodyPublishers.noBody()).build(),
                BodyHandlers.ofString());

        assertThat(anonymous.statusCode()).isEqualTo(401);
        List<SpanData> spans = retrySafeSpans();
        assertThat(spans).extracting(s -> s.getAttributes().get(OUTCOME)).containsExactly("unauthenticated");
        assertThat(spans).extracting(s -> s.getAttributes().get(DIGEST)).containsOnlyNulls();
    }

    private HttpResponse<String> post(String path, String header, String value) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).header("X-User", "alice")
                .header(header, value).POST(HttpRequest.BodyPublishers.noBody()).build(), BodyHandlers.ofString());
    }

    private static List<SpanData> retrySafeSpans() {
        return TRACING.retrySafe();
    }

    /** The finished span {@code span} is a child of, or null. */
    private static SpanData parentOf(SpanData span) {
        return TRACING.all().stream().filter(s -> s.getSpanId().equals(span.getParentSpanId())).findFirst()
                .orElse(null);
    }

    private void assertTheRawKeyIsInNoSpan() {
        assertThat(TRACING.all()).isNotEmpty().allSatisfy(span -> {
            assertThat(span.getName()).doesNotContain(key);
            span.getAttributes().forEach((name, value) -> assertThat(String.valueOf(value)).as(name.getKey())
                    .doesNotContain(key));
        });
    }
}
