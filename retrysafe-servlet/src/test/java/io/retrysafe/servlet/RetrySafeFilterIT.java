package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.Attempt;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Engines;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.servlet.FaultInjectingStore.Fault;
import io.retrysafe.testservices.TestDatabases;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.nio.charset.Charset;
import java.nio.file.Path;
import java.security.Principal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The filter as a client sees it: a real Tomcat, real HTTP/1.1, the real in-memory store (standalone
 * mode) and the real PostgreSQL store (transactional mode). Every answer of the filter's
 * decision table (docs/http.md): status, headers, problem type, and how often the handler ran.
 */
class RetrySafeFilterIT {
    private static final int MAX_REQUEST_BYTES = 1024;
    private static final int MAX_RESPONSE_BYTES = 2048;
    private static final String KEY = HttpIdempotency.HEADER;
    private static final String REPLAYED = RetrySafeFilter.REPLAYED_HEADER;
    private static final String JSON = "application/json";
    private static final String FORM = "application/x-www-form-urlencoded";
    private static final String ALICE = "alice";
    private static final String BOB = "bob";

    @TempDir
    static Path baseDir;

    private static HttpClient http;
    private static FaultInjectingStore store;
    private static EmbeddedTomcat tomcat;

    /** Unique per test: counts the handler's runs of requests without a key too. */
    private String testId;
    /** A fresh Idempotency-Key per test. */
    private String key;

    @BeforeAll
    static void startTomcat() throws Exception {
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10))
                .build();
        store = new FaultInjectingStore(new InMemoryIdempotencyStore());
        RetrySafe engine = RetrySafe.builder(store).name("servlet-it").build();
        HttpIdempotency byHeader = HttpIdempotency.custom()
                .route(IdempotentRoute.of("POST", "/payments").build())
                .route(IdempotentRoute.of("PUT", "/payments").build())
                .route(IdempotentRoute.of("POST", "/optional").keyRequired(false).build())
                .route(IdempotentRoute.of("POST", "/by-account").fingerprintHeaders("X-Account").build())
                .scope(ScopeResolver.header("X-User"))
                .maxRequestBytes(MAX_REQUEST_BYTES)
                .maxResponseBytes(MAX_RESPONSE_BYTES)
                .build();
        HttpIdempotency byPrincipal = HttpIdempotency.custom()
                .route(IdempotentRoute.of("POST", "/secure/payments").build())
                .scope(ScopeResolver.principal())
                .build();
        tomcat = EmbeddedTomcat.start(baseDir.resolve("standalone"), context -> {
            EmbeddedTomcat.filter(context, "retrysafe",
                    new RetrySafeFilter(byHeader, IdempotentExecutor.standalone(engine), engine.listener()), "/*");
            EmbeddedTomcat.filter(context, "authentication", new HeaderAuthenticationFilter(), "/secure/*");
            EmbeddedTomcat.filter(context, "retrysafe-principal",
                    new RetrySafeFilter(byPrincipal, IdempotentExecutor.standalone(engine), engine.listener()),
                    "/secure/*");
            EmbeddedTomcat.servlet(context, "payments", new PaymentsServlet(), "/*");
        });
    }

    @AfterAll
    static void stopTomcat() throws Exception {
        PaymentsServlet.RELEASE.values().forEach(CountDownLatch::countDown);
        if (tomcat != null) {
            tomcat.close();
        }
    }

    @BeforeEach
    void newIds() {
        testId = UUID.randomUUID().toString();
        key = UUID.randomUUID().toString();
    }

    @AfterEach
    void storeUp() {
        store.fault(Fault.NONE);
    }

    // ------------------------------------------------------------------ keys

    @Test
    void missingKeyOnARequiredRouteIs400AndDoesNotRun() throws Exception {
        HttpResponse<byte[]> r = send(post("/payments", ALICE, null, JSON, "{\"amount\":100}"));

        assertProblem(r, 400, "/problems/missing-key");
        assertThat(member(r, "rule")).isEqualTo("missing");
        assertThat(runsOfTest()).isZero();
    }

    static Stream<Arguments> malformedKeys() {
        return Stream.of(
                Arguments.of(List.of("\"\""), "empty"),
                Arguments.of(List.of("k".repeat(256)), "too_long"),
                Arguments.of(List.of("\"" + "k".repeat(256) + "\""), "too_long"),
                Arguments.of(List.of("first-key", "second-key"), "multiple_values"),
                Arguments.of(List.of("\"a\", \"b\""), "multiple_values"),
                Arguments.of(List.of("a,b"), "multiple_values"),
                Arguments.of(List.of("\"unterminated"), "malformed"),
                Arguments.of(List.of("\"a\"b"), "malformed"),
                Arguments.of(List.of("\"a\\b\""), "malformed"),
                Arguments.of(List.of("two words"), "malformed"));
    }

    @ParameterizedTest
    @MethodSource("malformedKeys")
    void malformedKeyIs400WithTheRuleAndDoesNotRun(List<String> fieldLines, String rule) throws Exception {
        HttpRequest.Builder request = post("/payments", ALICE, null, JSON, "{\"amount\":100}");
        fieldLines.forEach(line -> request.header(KEY, line));

        HttpResponse<byte[]> r = send(request);

        assertProblem(r, 400, "/problems/invalid-key");
        assertThat(member(r, "rule")).isEqualTo(rule);
        assertThat(runsOfTest()).isZero();
    }

    /** Raw bytes: java.net.http does not send a header byte outside ASCII as it is. */
    @Test
    void aKeyOutsidePrintableAsciiIs400AndDoesNotRun() throws Exception {
        String response = rawExchange(("POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: alice\r\nX-Test: " + testId
                + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n"
                + "Idempotency-Key: caf\u00e9-" + key + "\r\n\r\n{}").getBytes(ISO_8859_1));

        assertThat(response).startsWith("HTTP/1.1 400 ").containsIgnoringCase("\r\nContent-Type: application/problem+json\r\n")
                .contains("\"type\":\"/problems/invalid-key\"").contains("\"rule\":\"not_printable_ascii\"");
        assertThat(runsOfTest()).isZero();
    }

    /**
     * A client that asked to be told before it sends its body ({@code Expect: 100-continue}) and is refused sends
     * none: the refusal is its final answer, and no {@code 100 Continue} follows it (which the lingering's read of the
     * body would ask the container for).
     */
    @Test
    void aRefusedRequestThatExpectsToContinueGetsTheRefusalAsItsLastAnswer() throws Exception {
        String response = rawExchange(("POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: alice\r\nX-Test: " + testId
                + "\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n")
                .getBytes(ISO_8859_1));

        // Tomcat sends its 100 on the head, before the filter runs; nothing may follow the refusal
        String last = response.substring(response.lastIndexOf("HTTP/1.1 "));
        assertThat(last).startsWith("HTTP/1.1 400 ").contains("\"type\":\"/problems/missing-key\"");
        assertThat(response.substring(0, response.length() - last.length())).as("before the refusal")
                .matches("(HTTP/1\\.1 100[^\r\n]*\r\n\r\n)?");
        assertThat(runsOfTest()).isZero();
    }

    @Test
    void aQuotedKeyIsTheSameKeyAsTheBareOne() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> retry = send(post("/payments", ALICE, "\"" + key + "\"", JSON, "{\"amount\":100}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertReplayOf(retry, first);
        assertThat(runsOfTest()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ first request, retry, mismatch

    @Test
    void firstRequestRunsAndTheRetryReplaysTheStoredAnswer() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments", ALICE, key, JSON, "{\"amount\":100,\"currency\":\"EUR\"}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(first.headers().firstValue("Content-Type")).hasValue(JSON);
        assertThat(first.headers().firstValue("Location")).hasValueSatisfying(l -> assertThat(l).startsWith("/payments/"));
        assertThat(first.headers().firstValue("Set-Cookie")).isPresent();
        assertThat(first.headers().firstValue("X-Trace")).isPresent();
        assertThat(text(first)).contains("\"received\":31");
        assertThat(runs(key)).isEqualTo(1);

        HttpResponse<byte[]> retry = send(post("/payments", ALICE, key, JSON, "{\"amount\":100,\"currency\":\"EUR\"}"));

        assertReplayOf(retry, first);
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.headers().firstValue("Content-Type")).hasValue(JSON);
        assertThat(retry.headers().allValues("Set-Cookie")).isEmpty();
        assertThat(retry.headers().allValues("X-Trace")).isEmpty();
        assertThat(runs(key)).isEqualTo(1);
    }

    @Test
    void theSameJsonReSerialisedIsAReplayNotAMismatch() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments", ALICE, key, JSON,
                "{\"amount\":100,\"currency\":\"EUR\",\"payee\":{\"iban\":\"DE89\",\"name\":\"Zoe\"}}"));
        HttpResponse<byte[]> retry = send(post("/payments", ALICE, key, JSON,
                "{\n  \"payee\" : { \"name\" : \"Zoe\", \"iban\" : \"DE89\" },\n\t\"currency\":\"EUR\" , \"amount\" : 100\n}\n"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertReplayOf(retry, first);
        assertThat(runs(key)).isEqualTo(1);
    }

    @Test
    void anotherBodyUnderTheSameKeyIs422AndDoesNotRun() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> other = send(post("/payments", ALICE, key, JSON, "{\"amount\":101}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertProblem(other, 422, "/problems/key-reused");
        assertThat(other.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs(key)).isEqualTo(1);

        // The refusal altered nothing: the original request still replays.
        assertReplayOf(send(post("/payments", ALICE, key, JSON, "{\"amount\":100}")), first);
    }

    @Test
    void malformedJsonWithAJsonContentTypeIs400AndDoesNotRun() throws Exception {
        HttpResponse<byte[]> r = send(post("/payments", ALICE, key, JSON, "{\"amount\":100,"));

        assertProblem(r, 400, "/problems/malformed-json");
        assertThat(runs(key)).isZero();

        // Nothing was claimed: the well-formed request under the same key runs.
        assertThat(send(post("/payments", ALICE, key, JSON, "{\"amount\":100}")).statusCode()).isEqualTo(201);
        assertThat(runs(key)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ in flight

    @Test
    void aRetryWhileTheFirstIsInFlightIs409WithRetryAfter() throws Exception {
        String block = UUID.randomUUID().toString();
        CountDownLatch release = PaymentsServlet.latch(block);
        try {
            CompletableFuture<HttpResponse<byte[]>> first = http.sendAsync(
                    post("/payments?block=" + block, ALICE, key, JSON, "{\"amount\":100}").build(),
                    BodyHandlers.ofByteArray());
            await().atMost(Duration.ofSeconds(20)).until(() -> PaymentsServlet.ENTERED.contains(block));

            HttpResponse<byte[]> duplicate = send(post("/payments?block=" + block, ALICE, key, JSON, "{\"amount\":100}"));

            assertProblem(duplicate, 409, "/problems/request-in-progress");
            assertThat(duplicate.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(first).isNotDone();

            release.countDown();
            HttpResponse<byte[]> firstAnswer = first.get(20, TimeUnit.SECONDS);
            assertThat(firstAnswer.statusCode()).isEqualTo(201);
            assertThat(firstAnswer.headers().firstValue(REPLAYED)).isEmpty();
            assertReplayOf(send(post("/payments?block=" + block, ALICE, key, JSON, "{\"amount\":100}")), firstAnswer);
            assertThat(runs(key)).isEqualTo(1);
        } finally {
            release.countDown();
        }
    }

    @Test
    void sixtyFourConcurrentDuplicatesRunTheHandlerOnce() throws Exception {
        int n = 64;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService clients = Executors.newFixedThreadPool(n);
        List<HttpResponse<byte[]>> answers = new ArrayList<>();
        try {
            List<Future<HttpResponse<byte[]>>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                futures.add(clients.submit(() -> {
                    if (!start.await(20, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("never started");
                    }
                    return send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));
                }));
            }
            start.countDown();
            for (Future<HttpResponse<byte[]>> f : futures) {
                answers.add(f.get(60, TimeUnit.SECONDS));
            }
        } finally {
            clients.shutdownNow();
        }

        assertThat(runs(key)).isEqualTo(1);
        List<HttpResponse<byte[]>> created = answers.stream().filter(r -> r.statusCode() == 201).toList();
        assertThat(created).isNotEmpty();
        assertThat(created).filteredOn(r -> r.headers().firstValue(REPLAYED).isEmpty()).hasSize(1);
        byte[] body = created.get(0).body();
        for (HttpResponse<byte[]> r : answers) {
            if (r.statusCode() == 201) {
                assertThat(r.body()).isEqualTo(body);
                assertThat(r.headers().firstValue("Location")).isEqualTo(created.get(0).headers().firstValue("Location"));
            } else {
                assertProblem(r, 409, "/problems/request-in-progress");
                assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
            }
        }
    }

    // ------------------------------------------------------------------ size bounds

    @ParameterizedTest(name = "chunked={0}")
    @ValueSource(booleans = {false, true})
    void aBodyOverMaxRequestBytesIs413AndDoesNotRun(boolean chunked) throws Exception {
        byte[] body = ("{\"memo\":\"" + "x".repeat(MAX_REQUEST_BYTES) + "\"}").getBytes(UTF_8);
        HttpRequest.Builder request = post("/payments", ALICE, key, JSON, "");
        request.POST(chunked ? BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))
                : BodyPublishers.ofByteArray(body));

        HttpResponse<byte[]> r = send(request);

        assertProblem(r, 413, "/problems/request-too-large");
        assertThat(runs(key)).isZero();
    }

    @Test
    void aBodyOfExactlyMaxRequestBytesRuns() throws Exception {
        String json = "{\"memo\":\"" + "x".repeat(MAX_REQUEST_BYTES - 11) + "\"}";
        assertThat(json.getBytes(UTF_8)).hasSize(MAX_REQUEST_BYTES);

        HttpResponse<byte[]> r = send(post("/payments", ALICE, key, JSON, json));

        assertThat(r.statusCode()).isEqualTo(201);
        assertThat(text(r)).contains("\"received\":" + MAX_REQUEST_BYTES);
    }

    @Test
    void aResponseOverMaxResponseBytesIsSentWholeButReplayedWithoutItsBody() throws Exception {
        int size = MAX_RESPONSE_BYTES * 3;
        HttpResponse<byte[]> first = send(post("/payments?big=" + size, ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.body()).hasSize(size);
        assertThat(first.headers().firstValue("Content-Type")).hasValue("text/plain");

        HttpResponse<byte[]> retry = send(post("/payments?big=" + size, ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(REPLAYED)).hasValue("true");
        assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
        assertThat(retry.headers().firstValue(CapturingResponse.BODY_OMITTED_HEADER)).hasValue(Integer.toString(size));
        assertThat(retry.body()).isEmpty(); // never a truncated body
        assertThat(retry.headers().allValues("Set-Cookie")).isEmpty();
        assertThat(runs(key)).isEqualTo(1);
    }

    // ------------------------------------------------------------------ store failures

    @Test
    void storeDownIs503WithRetryAfterAndDoesNotRun() throws Exception {
        store.fault(Fault.ALL);

        HttpResponse<byte[]> r = send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));

        assertProblem(r, 503, "/problems/store-unavailable");
        assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(runs(key)).isZero();

        store.fault(Fault.NONE);
        HttpResponse<byte[]> retry = send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));
        assertThat(retry.statusCode()).isEqualTo(201);
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs(key)).isEqualTo(1);
    }

    @Test
    void storeFailingToRecordTheOutcomeIs503NeverTheHandlersAnswer() throws Exception {
        store.fault(Fault.OUTCOME);

        HttpResponse<byte[]> r = send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));

        // Standalone mode: the handler ran, so no promise that it did not; its answer is withheld all the same.
        assertProblem(r, 503, "/problems/outcome-unknown");
        assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(r.headers().allValues("Location")).isEmpty();
        assertThat(r.headers().allValues("Set-Cookie")).isEmpty();
        assertThat(r.headers().allValues("X-Trace")).isEmpty();
        assertThat(runs(key)).isEqualTo(1);

        // Standalone mode: the claim is still held until its lease expires, so a retry is told to wait, not run.
        store.fault(Fault.NONE);
        HttpResponse<byte[]> retry = send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));
        assertProblem(retry, 409, "/problems/request-in-progress");
        assertThat(runs(key)).isEqualTo(1);
    }

    @Test
    void aHandlerThatDoesNotKnowItsOutcomeIsAnsweredOutcomeUnknownAndItsKeyStaysInProgress() throws Exception {
        HttpResponse<byte[]> r = send(post("/payments?unknown", ALICE, key, JSON, "{\"amount\":100}"));

        assertProblem(r, 503, "/problems/outcome-unknown");
        assertThat(r.headers().firstValue("Retry-After")).hasValue("2");
        assertThat(runs(key)).isEqualTo(1);

        // Not released: the handler's effect may still be happening, so no retry runs it before the lease ends.
        HttpResponse<byte[]> retry = send(post("/payments?unknown", ALICE, key, JSON, "{\"amount\":100}"));
        assertProblem(retry, 409, "/problems/request-in-progress");
        assertThat(runs(key)).isEqualTo(1);
    }

    @Test
    void aFingerprintedHeaderIsPartOfTheIntent() throws Exception {
        HttpResponse<byte[]> first = send(post("/by-account", ALICE, key, JSON, "{\"amount\":1}").header("X-Account", "a"));
        HttpResponse<byte[]> retry = send(post("/by-account", ALICE, key, JSON, "{\"amount\":1}").header("X-Account", "a"));
        HttpResponse<byte[]> other = send(post("/by-account", ALICE, key, JSON, "{\"amount\":1}").header("X-Account", "b"));
        HttpResponse<byte[]> none = send(post("/by-account", ALICE, key, JSON, "{\"amount\":1}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertReplayOf(retry, first);
        assertProblem(other, 422, "/problems/key-reused");
        assertProblem(none, 422, "/problems/key-reused");
        assertThat(runs(key)).isEqualTo(1);
    }

    @Test
    void theHandlerIsToldWhichAttemptRunsIt() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments?attempt&status=503", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> second = send(post("/payments?attempt&status=503", ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(first.headers().firstValue("X-Attempt")).hasValue("1");
        assertThat(second.headers().firstValue("X-Attempt")).as("after the 503 released the key").hasValue("2");
    }

    // ------------------------------------------------------------------ outcome policy

    @Test
    void aHandlers503IsPassedThroughNotStoredAndTheRetryRunsAgain() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments?status=503", ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(first.statusCode()).isEqualTo(503);
        assertThat(first.headers().firstValue("Content-Type")).hasValue(JSON);
        assertThat(text(first)).contains("\"run\":1");
        assertThat(first.headers().firstValue(REPLAYED)).isEmpty();

        HttpResponse<byte[]> retry = send(post("/payments?status=503", ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(retry.statusCode()).isEqualTo(503);
        assertThat(text(retry)).contains("\"run\":2");
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs(key)).isEqualTo(2);
    }

    @Test
    void aHandlers4xxIsStoredAndReplayed() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments?status=402", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> retry = send(post("/payments?status=402", ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(first.statusCode()).isEqualTo(402);
        assertReplayOf(retry, first);
        assertThat(runs(key)).isEqualTo(1);
    }

    @Test
    void aHandlerThatThrowsIs500FromTheContainerAndTheRetryRunsAgain() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments?fail=true", ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(first.statusCode()).isEqualTo(500);
        assertThat(first.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs(key)).isEqualTo(1);

        HttpResponse<byte[]> retry = send(post("/payments?fail=true", ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(retry.statusCode()).isEqualTo(500);
        assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs(key)).isEqualTo(2);
    }

    // ------------------------------------------------------------------ scope

    @Test
    void oneUsersKeyNeverReplaysToAnother() throws Exception {
        HttpResponse<byte[]> alice = send(post("/payments", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> bob = send(post("/payments", BOB, key, JSON, "{\"amount\":100}"));

        assertThat(alice.statusCode()).isEqualTo(201);
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(bob.body()).isNotEqualTo(alice.body());
        assertThat(runs(key)).isEqualTo(2);

        assertReplayOf(send(post("/payments", ALICE, key, JSON, "{\"amount\":100}")), alice);
        assertReplayOf(send(post("/payments", BOB, key, JSON, "{\"amount\":100}")), bob);
        // Bob's other body is judged against Bob's record only.
        assertProblem(send(post("/payments", BOB, key, JSON, "{\"amount\":5}")), 422, "/problems/key-reused");
        assertThat(runs(key)).isEqualTo(2);
    }

    @Test
    void noScopeIs401AndDoesNotRun() throws Exception {
        HttpResponse<byte[]> r = send(post("/payments", null, key, JSON, "{\"amount\":100}"));

        assertProblem(r, 401, "/problems/unauthenticated");
        assertThat(runs(key)).isZero();
    }

    @Test
    void principalScopeWithoutAPrincipalIs401AndDoesNotRun() throws Exception {
        HttpResponse<byte[]> r = send(post("/secure/payments", null, key, JSON, "{\"amount\":100}"));

        assertProblem(r, 401, "/problems/unauthenticated");
        assertThat(runs(key)).isZero();
    }

    @Test
    void principalScopeKeepsEachPrincipalsKeysApart() throws Exception {
        HttpResponse<byte[]> alice = send(post("/secure/payments", null, key, JSON, "{\"amount\":100}")
                .header("X-Principal", ALICE));
        HttpResponse<byte[]> aliceAgain = send(post("/secure/payments", null, key, JSON, "{\"amount\":100}")
                .header("X-Principal", ALICE));
        HttpResponse<byte[]> bob = send(post("/secure/payments", null, key, JSON, "{\"amount\":100}")
                .header("X-Principal", BOB));

        assertThat(alice.statusCode()).isEqualTo(201);
        assertReplayOf(aliceAgain, alice);
        assertThat(bob.statusCode()).isEqualTo(201);
        assertThat(bob.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs(key)).isEqualTo(2);
    }

    // ------------------------------------------------------------------ what is not protected

    @Test
    void getPassesThroughEvenWithAKey() throws Exception {
        HttpRequest.Builder get = request("/payments").header("X-User", ALICE).header(KEY, key).GET();

        HttpResponse<byte[]> first = send(get);
        HttpResponse<byte[]> second = send(get);

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(second.statusCode()).isEqualTo(200);
        assertThat(second.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(runs(key)).isEqualTo(2);
    }

    @Test
    void aRouteNotConfiguredPassesThroughWithoutAnyCheck() throws Exception {
        HttpResponse<byte[]> first = send(post("/other", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> second = send(post("/other", ALICE, key, JSON, "{not json"));
        HttpResponse<byte[]> badKey = send(post("/other", null, "\"", JSON, "{\"amount\":100}"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(second.statusCode()).isEqualTo(201);
        assertThat(second.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(badKey.statusCode()).isEqualTo(201);
        assertThat(runs(key)).isEqualTo(2);
        assertThat(runsOfTest()).isEqualTo(3);
    }

    @Test
    void aRouteWithAnOptionalKeyPassesThroughWithoutOneAndIsProtectedWithOne() throws Exception {
        HttpResponse<byte[]> noKey1 = send(post("/optional", ALICE, null, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> noKey2 = send(post("/optional", ALICE, null, JSON, "{\"amount\":100}"));

        assertThat(noKey1.statusCode()).isEqualTo(201);
        assertThat(noKey2.statusCode()).isEqualTo(201);
        assertThat(noKey2.headers().firstValue(REPLAYED)).isEmpty();
        assertThat(noKey2.headers().allValues("Set-Cookie")).hasSize(1);
        assertThat(runsOfTest()).isEqualTo(2);

        HttpResponse<byte[]> keyed = send(post("/optional", ALICE, key, JSON, "{\"amount\":100}"));
        assertReplayOf(send(post("/optional", ALICE, key, JSON, "{\"amount\":100}")), keyed);
        assertThat(runsOfTest()).isEqualTo(3);
    }

    // ------------------------------------------------------------------ form bodies

    @Test
    void aFormBodyReachesGetParameterAndIsFingerprinted() throws Exception {
        HttpResponse<byte[]> first = send(post("/payments", ALICE, key, FORM, "amount=100&currency=EUR&memo=rent+May"));

        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(text(first)).contains("\"amount\":\"100\"").contains("\"memo\":\"rent May\"");

        assertReplayOf(send(post("/payments", ALICE, key, FORM, "amount=100&currency=EUR&memo=rent+May")), first);
        assertReplayOf(send(post("/payments", ALICE, key, FORM, "memo=rent%20May&currency=EUR&amount=100")), first);
        assertProblem(send(post("/payments", ALICE, key, FORM, "amount=200&currency=EUR&memo=rent+May")), 422,
                "/problems/key-reused");
        assertProblem(send(post("/payments", ALICE, key, FORM, "amount=100&currency=EUR")), 422,
                "/problems/key-reused");
        assertThat(runs(key)).isEqualTo(1);
    }

    /**
     * A container parses a form body into parameters for POST only: a PUT's form is bytes the handler reads.
     * Its fields are still what the fingerprint covers, so a key reused with other fields is refused.
     */
    @Test
    void aFormBodyOfAPutIsFingerprintedAndReachesTheHandlerWhole() throws Exception {
        HttpResponse<byte[]> first = send(put("/payments", key, FORM, "amount=100&currency=EUR"));

        assertThat(first.statusCode()).isEqualTo(200);
        assertThat(text(first)).contains("\"body\":\"amount=100&currency=EUR\"");
        assertReplayOf(send(put("/payments", key, FORM, "amount=100&currency=EUR")), first);
        assertReplayOf(send(put("/payments", key, FORM, "currency=EUR&amount=100")), first);
        assertProblem(send(put("/payments", key, FORM, "amount=200&currency=EUR")), 422, "/problems/key-reused");
        assertThat(runs(key)).isEqualTo(1);
    }

    /** The client closes its side before the Content-Length it declared: the PUT never runs. */
    @Test
    void aFormBodyOfAPutCutShortDoesNotRun() throws Exception {
        String response = rawExchange(("PUT /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: alice\r\nX-Test: " + testId
                + "\r\nIdempotency-Key: " + key + "\r\nContent-Type: " + FORM + "\r\nContent-Length: 40\r\n"
                + "Connection: close\r\n\r\namount=100&currency=EUR").getBytes(ISO_8859_1), true);

        assertThat(response).startsWith("HTTP/1.1 400 ");
        assertThat(runs(key)).isZero();
        assertThat(send(put("/payments", key, FORM, "amount=100&currency=EUR")).statusCode()).isEqualTo(200);
        assertThat(runs(key)).isEqualTo(1);
    }

    @ParameterizedTest(name = "chunked={0}")
    @ValueSource(booleans = {false, true})
    void aFormBodyOverMaxRequestBytesIs413AndDoesNotRun(boolean chunked) throws Exception {
        byte[] body = ("amount=100&memo=" + "x".repeat(MAX_REQUEST_BYTES)).getBytes(UTF_8);
        HttpRequest.Builder request = post("/payments", ALICE, key, FORM, "");
        request.POST(chunked ? BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(body))
                : BodyPublishers.ofByteArray(body));

        HttpResponse<byte[]> r = send(request);

        assertProblem(r, 413, "/problems/request-too-large");
        assertThat(runs(key)).isZero();
    }

    // ------------------------------------------------------------------ what the handler wrote

    /** The container names the charset its getWriter() encodes with; held back, the answer must still say it. */
    @Test
    void aBodyWrittenThroughGetWriterIsLabelledWithItsCharset() throws Exception {
        HttpResponse<byte[]> unprotected = send(post("/other?writer=true", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> first = send(post("/payments?writer=true", ALICE, key, JSON, "{\"amount\":100}"));
        HttpResponse<byte[]> retry = send(post("/payments?writer=true", ALICE, key, JSON, "{\"amount\":100}"));

        assertThat(decoded(unprotected)).contains(PaymentsServlet.PAYEE);
        assertThat(first.statusCode()).isEqualTo(201);
        assertThat(first.headers().firstValue("Content-Type")).isEqualTo(unprotected.headers().firstValue("Content-Type"));
        assertThat(decoded(first)).contains(PaymentsServlet.PAYEE);
        assertReplayOf(retry, first);
        assertThat(decoded(retry)).contains(PaymentsServlet.PAYEE);
    }

    // ------------------------------------------------------------------ transactional mode

    /** Key, business row and stored response commit in one PostgreSQL transaction. */
    @Nested
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class Transactional {
        private static final String RECORDS = "rs_servlet_it";
        private static final String PAYMENTS = "rs_servlet_it_payment";

        private DataSource ds;
        /** The pool the filter's transactions take their connections from, counted. */
        private CountingDataSource pool;
        private TransactionalRetrySafe tx;
        private EmbeddedTomcat txTomcat;
        /** The same application with the key written last, without a look-up before the handler. */
        private EmbeddedTomcat noLookupTomcat;

        @BeforeAll
        void start() throws Exception {
            ds = TestDatabases.postgres();
            JdbcIdempotencyStore jdbc = JdbcIdempotencyStore.builder(ds).table(RECORDS).build();
            jdbc.createSchema();
            try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                st.execute("CREATE TABLE IF NOT EXISTS " + PAYMENTS + " (id bigserial PRIMARY KEY, ref text NOT NULL, "
                        + "slot integer, CONSTRAINT " + PAYMENTS + "_slot UNIQUE (slot) DEFERRABLE INITIALLY DEFERRED)");
            }
            tx = TransactionalRetrySafe.of(RetrySafe.builder(jdbc).name("servlet-it-tx").build());
            pool = new CountingDataSource(ds);
            HttpIdempotency config = HttpIdempotency.custom()
                    .route(IdempotentRoute.of("POST", "/payments").build())
                    .scope(ScopeResolver.header("X-User"))
                    .build();
            txTomcat = EmbeddedTomcat.start(baseDir.resolve("transactional"), context -> {
                EmbeddedTomcat.filter(context, "retrysafe",
                        new RetrySafeFilter(config, new JdbcTransactionalExecutor(tx, pool), tx.engine().listener()), "/*");
                EmbeddedTomcat.servlet(context, "ledger", new LedgerServlet(), "/*");
            });
            TransactionalRetrySafe noLookup = TransactionalRetrySafe.of(
                    RetrySafe.builder(jdbc).name("servlet-it-no-lookup").build(), KeyOrder.LAST_NO_LOOKUP);
            noLookupTomcat = EmbeddedTomcat.start(baseDir.resolve("no-lookup"), context -> {
                EmbeddedTomcat.filter(context, "retrysafe", new RetrySafeFilter(config,
                        new JdbcTransactionalExecutor(noLookup, pool), noLookup.engine().listener()), "/*");
                EmbeddedTomcat.servlet(context, "ledger", new LedgerServlet(), "/*");
            });
        }

        @AfterAll
        void stop() throws Exception {
            if (txTomcat != null) {
                txTomcat.close();
            }
            if (noLookupTomcat != null) {
                noLookupTomcat.close();
            }
        }

        private HttpRequest.Builder pay(String pathAndQuery) {
            return pay(txTomcat, pathAndQuery);
        }

        private HttpRequest.Builder pay(EmbeddedTomcat on, String pathAndQuery) {
            return HttpRequest.newBuilder(on.uri(pathAndQuery)).timeout(Duration.ofSeconds(30))
                    .header("X-User", ALICE).header(KEY, key).header("Content-Type", JSON)
                    .POST(BodyPublishers.ofString("{\"amount\":100}"));
        }

        @Test
        void successCommitsOneRowAndTheRetryReplays() throws Exception {
            HttpResponse<byte[]> first = send(pay("/payments"));

            assertThat(first.statusCode()).isEqualTo(201);
            assertThat(first.headers().firstValue(REPLAYED)).isEmpty();
            assertThat(first.headers().firstValue("Set-Cookie")).isPresent();
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isEqualTo(1);
            assertThat(count("SELECT count(*) FROM " + RECORDS + " WHERE idem_key = ? AND status = 'COMPLETED'", key))
                    .isEqualTo(1);

            HttpResponse<byte[]> retry = send(pay("/payments"));

            assertReplayOf(retry, first);
            assertThat(retry.headers().firstValue("Location")).isEqualTo(first.headers().firstValue("Location"));
            assertThat(retry.headers().allValues("Set-Cookie")).isEmpty();
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isEqualTo(1);
            assertThat(LedgerServlet.runs(key)).isEqualTo(1);
        }

        /**
         * Duplicates of a request in flight wait for it on this instance; once its answer is committed they are
         * given it from memory, each its own replay, without taking a connection or asking the database.
         */
        @Test
        void duplicatesWaitingForACommittedAnswerReplayItWithoutAConnection() throws Exception {
            int duplicates = 20;
            String hold = "hold-" + key;
            CompletableFuture<HttpResponse<byte[]>> first = http.sendAsync(pay("/payments?hold=" + hold).build(),
                    BodyHandlers.ofByteArray());
            await().atMost(Duration.ofSeconds(20)).until(() -> PaymentsServlet.ENTERED.contains(hold));
            List<CompletableFuture<HttpResponse<byte[]>>> waiting = new ArrayList<>();
            for (int i = 0; i < duplicates; i++) {
                waiting.add(http.sendAsync(pay("/payments?hold=" + hold).build(), BodyHandlers.ofByteArray()));
            }
            await().atMost(Duration.ofSeconds(20)).until(() -> Engines.inFlight(tx.engine()).waiting() == duplicates);
            int connectionsBefore = pool.connections();

            PaymentsServlet.latch(hold).countDown();

            HttpResponse<byte[]> answer = first.get(30, TimeUnit.SECONDS);
            assertThat(answer.statusCode()).isEqualTo(201);
            for (CompletableFuture<HttpResponse<byte[]>> duplicate : waiting) {
                assertReplayOf(duplicate.get(30, TimeUnit.SECONDS), answer);
            }
            assertThat(pool.connections() - connectionsBefore).as("connections the duplicates took").isZero();
            assertThat(LedgerServlet.runs(key)).isEqualTo(1);
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isEqualTo(1);
        }

        @Test
        void aCommitThatFailsIs503NeverTheHandlersAnswerAndNothingIsKept() throws Exception {
            int slot = ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE);
            String blocker = "blocker-" + key;
            update("INSERT INTO " + PAYMENTS + " (ref, slot) VALUES (?, " + slot + ")", blocker);
            try {
                HttpResponse<byte[]> r = send(pay("/payments?slot=" + slot));

                assertProblem(r, 503, "/problems/store-unavailable");
                assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
                assertThat(r.headers().allValues("Location")).isEmpty();
                assertThat(r.headers().allValues("Set-Cookie")).isEmpty();
                assertThat(LedgerServlet.runs(key)).isEqualTo(1);
                assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isZero();
                assertThat(count("SELECT count(*) FROM " + RECORDS + " WHERE idem_key = ?", key)).isZero();
            } finally {
                update("DELETE FROM " + PAYMENTS + " WHERE ref = ?", blocker);
            }

            // No key was kept: the retry runs again, and now commits.
            HttpResponse<byte[]> retry = send(pay("/payments?slot=" + slot));

            assertThat(retry.statusCode()).isEqualTo(201);
            assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
            assertThat(LedgerServlet.runs(key)).isEqualTo(2);
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isEqualTo(1);
        }

        @Test
        void aHandlers503RollsBackItsWrites() throws Exception {
            HttpResponse<byte[]> first = send(pay("/payments?status=503"));

            assertThat(first.statusCode()).isEqualTo(503);
            assertThat(first.headers().firstValue("Content-Type")).hasValue(JSON);
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isZero();
            assertThat(count("SELECT count(*) FROM " + RECORDS + " WHERE idem_key = ?", key)).isZero();

            HttpResponse<byte[]> retry = send(pay("/payments?status=503"));

            assertThat(retry.statusCode()).isEqualTo(503);
            assertThat(retry.headers().firstValue(REPLAYED)).isEmpty();
            assertThat(LedgerServlet.runs(key)).isEqualTo(2);
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isZero();
        }

        /**
         * Key last without a look-up writes the record with a plain insert after the handler. Over an expired
         * record of the key that insert fails, the run is rolled back, and the handler runs again with the key
         * claimed first: the answer is the second run's alone, not both runs' written one after the other.
         */
        @Test
        void keyLastWithoutALookUpRunsAgainOverAnExpiredRecordAndAnswersTheSecondRunAlone() throws Exception {
            HttpResponse<byte[]> first = send(pay(noLookupTomcat, "/payments"));
            assertThat(first.statusCode()).isEqualTo(201);
            update("UPDATE " + RECORDS + " SET expires_at = statement_timestamp() - interval '1 minute'"
                    + " WHERE idem_key = ?", key);

            HttpResponse<byte[]> again = send(pay(noLookupTomcat, "/payments"));

            assertThat(again.statusCode()).as("status of %s", text(again)).isEqualTo(201);
            assertThat(again.headers().firstValue(REPLAYED)).isEmpty();
            Matcher body = Pattern.compile("\\{\"id\":(\\d+),\"nonce\":\"[^\"]+\"}").matcher(text(again));
            assertThat(body.matches()).as("one run's body: %s", text(again)).isTrue();
            assertThat(again.headers().allValues("Location")).containsExactly("/payments/" + body.group(1));
            assertThat(again.headers().allValues("Set-Cookie")).hasSize(1);
            assertThat(LedgerServlet.runs(key)).as("the first request, the run rolled back, the run kept")
                    .isEqualTo(3);
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isEqualTo(2);

            // A retry runs the handler too (nothing is read before it), and is rolled back and given the stored answer.
            assertReplayOf(send(pay(noLookupTomcat, "/payments")), again);
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isEqualTo(2);
        }

        @Test
        void aHandlerThatThrowsRollsBackItsWrites() throws Exception {
            HttpResponse<byte[]> first = send(pay("/payments?fail=true"));

            assertThat(first.statusCode()).isEqualTo(500);
            assertThat(count("SELECT count(*) FROM " + PAYMENTS + " WHERE ref = ?", key)).isZero();
            assertThat(count("SELECT count(*) FROM " + RECORDS + " WHERE idem_key = ?", key)).isZero();
            assertThat(LedgerServlet.runs(key)).isEqualTo(1);
        }

        private long count(String sql, String arg) throws SQLException {
            try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setString(1, arg);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        }

        private void update(String sql, String arg) throws SQLException {
            try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setString(1, arg);
                ps.executeUpdate();
            }
        }
    }

    // ------------------------------------------------------------------ client helpers

    private HttpRequest.Builder request(String pathAndQuery) {
        return HttpRequest.newBuilder(tomcat.uri(pathAndQuery)).timeout(Duration.ofSeconds(30)).header("X-Test", testId);
    }

    private HttpRequest.Builder post(String pathAndQuery, String user, String idempotencyKey, String contentType,
            String body) {
        HttpRequest.Builder b = request(pathAndQuery).header("Content-Type", contentType)
                .POST(BodyPublishers.ofString(body));
        if (user != null) {
            b.header("X-User", user);
        }
        if (idempotencyKey != null) {
            b.header(KEY, idempotencyKey);
        }
        return b;
    }

    private HttpRequest.Builder put(String pathAndQuery, String idempotencyKey, String contentType, String body) {
        return request(pathAndQuery).header("Content-Type", contentType).header("X-User", ALICE)
                .header(KEY, idempotencyKey).PUT(BodyPublishers.ofString(body));
    }

    private static HttpResponse<byte[]> send(HttpRequest.Builder request) throws IOException, InterruptedException {
        return http.send(request.build(), BodyHandlers.ofByteArray());
    }

    /** One request written as raw bytes on its own connection; the whole answer, read as ISO-8859-1. */
    private static String rawExchange(byte[] request) throws IOException {
        return rawExchange(request, false);
    }

    /** As {@link #rawExchange(byte[])}; {@code thenClose}: the client closes its side after the bytes. */
    private static String rawExchange(byte[] request, boolean thenClose) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", tomcat.uri("/").getPort()), 10_000);
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(request);
            socket.getOutputStream().flush();
            if (thenClose) {
                socket.shutdownOutput();
            }
            return new String(socket.getInputStream().readAllBytes(), ISO_8859_1);
        }
    }

    private int runsOfTest() {
        return PaymentsServlet.count("test:" + testId);
    }

    private static int runs(String idempotencyKey) {
        return PaymentsServlet.count("key:" + idempotencyKey);
    }

    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), UTF_8);
    }

    /** The body decoded as its Content-Type says; JSON without a charset is UTF-8 (RFC 8259). */
    private static String decoded(HttpResponse<byte[]> r) {
        String contentType = r.headers().firstValue("Content-Type").orElse("");
        Matcher m = Pattern.compile("(?i)charset=\"?([^\";]+)").matcher(contentType);
        return new String(r.body(), m.find() ? Charset.forName(m.group(1)) : UTF_8);
    }

    private static String member(HttpResponse<byte[]> r, String name) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(name) + "\":\"([^\"]*)\"").matcher(text(r));
        return m.find() ? m.group(1) : null;
    }

    private static void assertProblem(HttpResponse<byte[]> r, int status, String type) {
        assertThat(r.statusCode()).as("status of %s", text(r)).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(member(r, "type")).isEqualTo(type);
        assertThat(text(r)).contains("\"status\":" + status);
        assertThat(r.headers().firstValue(REPLAYED)).isEmpty();
    }

    private static void assertReplayOf(HttpResponse<byte[]> retry, HttpResponse<byte[]> original) {
        assertThat(retry.statusCode()).as("status of %s", text(retry)).isEqualTo(original.statusCode());
        assertThat(retry.headers().firstValue(REPLAYED)).hasValue("true");
        assertThat(retry.body()).isEqualTo(original.body());
        assertThat(retry.headers().firstValue("Content-Type")).isEqualTo(original.headers().firstValue("Content-Type"));
        assertThat(retry.headers().firstValue("Location")).isEqualTo(original.headers().firstValue("Location"));
    }

    // ------------------------------------------------------------------ the application

    /** Stands in for authentication: a request's {@code X-Principal} header becomes its user principal. */
    static final class HeaderAuthenticationFilter implements Filter {
        @Override
        public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
                throws IOException, ServletException {
            HttpServletRequest request = (HttpServletRequest) req;
            String name = request.getHeader("X-Principal");
            if (name == null) {
                chain.doFilter(req, res);
                return;
            }
            Principal principal = () -> name;
            chain.doFilter(new HttpServletRequestWrapper(request) {
                @Override
                public Principal getUserPrincipal() {
                    return principal;
                }
            }, res);
        }
    }

    /**
     * A payments endpoint that counts its runs per key and per test. {@code POST} answers 201 with a
     * JSON body unique to the run, a {@code Location}, a {@code Set-Cookie} and an {@code X-Trace};
     * query parameters make it answer {@code status}, throw ({@code fail}), wait for the test
     * ({@code block}), write {@code big} bytes, or write through {@code getWriter()} ({@code writer}).
     */
    static final class PaymentsServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        static final String PAYEE = "Zoë Müller";
        static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();
        static final Map<String, CountDownLatch> RELEASE = new ConcurrentHashMap<>();
        static final Set<String> ENTERED = ConcurrentHashMap.newKeySet();

        static CountDownLatch latch(String block) {
            return RELEASE.computeIfAbsent(block, b -> new CountDownLatch(1));
        }

        static int count(String counter) {
            AtomicInteger n = RUNS.get(counter);
            return n == null ? 0 : n.get();
        }

        private static int countRun(HttpServletRequest req) {
            String idempotencyKey = req.getHeader(KEY);
            int run = 0;
            if (idempotencyKey != null) {
                run = RUNS.computeIfAbsent("key:" + idempotencyKey, k -> new AtomicInteger()).incrementAndGet();
            }
            String test = req.getHeader("X-Test");
            if (test != null) {
                RUNS.computeIfAbsent("test:" + test, k -> new AtomicInteger()).incrementAndGet();
            }
            return run;
        }

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            int run = countRun(req);
            resp.setContentType("text/plain");
            resp.getOutputStream().write(("run " + run).getBytes(UTF_8));
        }

        /** Echoes the body as it read it: no container parses a PUT's form into parameters. */
        @Override
        protected void doPut(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            int run = countRun(req);
            String body = new String(req.getInputStream().readAllBytes(), UTF_8);
            resp.setContentType(JSON);
            resp.getOutputStream().write(("{\"run\":" + run + ",\"body\":\"" + body + "\"}").getBytes(UTF_8));
        }

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            int run = countRun(req);
            boolean form = req.getContentType() != null
                    && req.getContentType().toLowerCase(Locale.ROOT).startsWith(FORM);
            int received = form ? -1 : req.getInputStream().readAllBytes().length;
            if (req.getParameter("fail") != null) {
                throw new IllegalStateException("the handler failed on purpose");
            }
            if (req.getParameter("unknown") != null) {
                // As a proxy whose request went out and no answer came back.
                throw new OutcomeUnknownException("upstream", Duration.ofSeconds(2), "sent, and no answer came", null);
            }
            if (req.getParameter("attempt") != null) {
                resp.setHeader("X-Attempt", Integer.toString(
                        ((Attempt) req.getAttribute(RetrySafeFilter.ATTEMPT_ATTRIBUTE)).number()));
            }
            String block = req.getParameter("block");
            if (block != null) {
                ENTERED.add(block);
                try {
                    if (!latch(block).await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the test never released " + block);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            String payment = UUID.randomUUID().toString();
            String status = req.getParameter("status");
            resp.setStatus(status == null ? 201 : Integer.parseInt(status));
            resp.setHeader("Location", "/payments/" + payment);
            resp.addHeader("Set-Cookie", "session=" + UUID.randomUUID() + "; Path=/; HttpOnly");
            resp.setHeader("X-Trace", UUID.randomUUID().toString());
            String big = req.getParameter("big");
            if (big != null) {
                resp.setContentType("text/plain");
                byte[] body = new byte[Integer.parseInt(big)];
                Arrays.fill(body, (byte) 'x');
                resp.getOutputStream().write(body);
                return;
            }
            resp.setContentType(JSON);
            if (req.getParameter("writer") != null) {
                resp.getWriter().write("{\"payment\":\"" + payment + "\",\"payee\":\"" + PAYEE + "\"}");
                return;
            }
            StringBuilder json = new StringBuilder("{\"payment\":\"").append(payment).append("\",\"run\":").append(run)
                    .append(",\"received\":").append(received);
            if (form) {
                json.append(",\"amount\":\"").append(req.getParameter("amount")).append("\",\"memo\":\"")
                        .append(req.getParameter("memo")).append('"');
            }
            resp.getOutputStream().write(json.append('}').toString().getBytes(UTF_8));
        }
    }

    /**
     * Writes a payment row on the transaction's connection ({@code slot} may collide with a deferred
     * unique constraint, failing only at commit); answers like {@link PaymentsServlet}.
     */
    static final class LedgerServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        static final Map<String, AtomicInteger> RUNS = new ConcurrentHashMap<>();

        static int runs(String idempotencyKey) {
            AtomicInteger n = RUNS.get(idempotencyKey);
            return n == null ? 0 : n.get();
        }

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException, ServletException {
            String ref = req.getHeader(KEY);
            RUNS.computeIfAbsent(String.valueOf(ref), k -> new AtomicInteger()).incrementAndGet();
            Connection c = (Connection) req.getAttribute(JdbcTransactionalExecutor.CONNECTION_ATTRIBUTE);
            if (c == null) {
                throw new ServletException("no transaction: the filter did not run");
            }
            req.getInputStream().readAllBytes();
            long id;
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + Transactional.PAYMENTS
                    + " (ref, slot) VALUES (?, ?) RETURNING id")) {
                ps.setString(1, ref);
                String slot = req.getParameter("slot");
                if (slot == null) {
                    ps.setNull(2, java.sql.Types.INTEGER);
                } else {
                    ps.setInt(2, Integer.parseInt(slot));
                }
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    id = rs.getLong(1);
                }
            } catch (SQLException e) {
                throw new ServletException(e);
            }
            String hold = req.getParameter("hold");
            if (hold != null) {
                // Held after its write, inside the transaction, until the test lets it go.
                PaymentsServlet.ENTERED.add(hold);
                try {
                    PaymentsServlet.latch(hold).await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ServletException(e);
                }
            }
            if (req.getParameter("fail") != null) {
                throw new IllegalStateException("the handler failed on purpose after writing");
            }
            String status = req.getParameter("status");
            resp.setStatus(status == null ? 201 : Integer.parseInt(status));
            resp.setHeader("Location", "/payments/" + id);
            resp.addHeader("Set-Cookie", "session=" + UUID.randomUUID() + "; Path=/; HttpOnly");
            resp.setContentType(JSON);
            resp.getOutputStream().write(("{\"id\":" + id + ",\"nonce\":\"" + UUID.randomUUID() + "\"}").getBytes(UTF_8));
        }
    }
}
