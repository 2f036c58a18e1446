package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandlers;
import java.security.Principal;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@link Idempotent} methods behind a real Tomcat and the real PostgreSQL, as callers see them: whose
 * key is whose, what happens without a caller, and the per-method settings (retention, business
 * refusals stored as outcomes). The caller is whoever the request's {@code X-User} header names (a
 * stand-in for an authentication filter), resolved by the starter's principal {@link ScopeResolver}.
 */
@SpringBootTest(classes = IdempotentMethodCallerIT.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "retrysafe.store.initialize-schema=true")
// Its pool is closed with the context after the class: the database server's connections are shared.
@DirtiesContext
class IdempotentMethodCallerIT {
    private static final String SUFFIX = UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    static final String RECORDS = "rs_caller_records_" + SUFFIX;
    private static final String USER = "X-User";

    @DynamicPropertySource
    static void postgres(DynamicPropertyRegistry registry) {
        SpringPostgres.register(registry, RECORDS);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {
        @Bean
        Probe probe() {
            return new Probe();
        }

        @Bean
        Orders orders(Probe probe) {
            return new Orders(probe);
        }

        @Bean
        OrdersController ordersController(Orders orders) {
            return new OrdersController(orders);
        }

        /** The starter's default resolver; declared because this test runs without Spring Security. */
        @Bean
        ScopeResolver scopeResolver() {
            return ScopeResolver.principal();
        }

        /** Authenticates whoever {@code X-User} names, blank names included (a token without a subject). */
        @Bean
        FilterRegistrationBean<Filter> authentication() {
            FilterRegistrationBean<Filter> registration = new FilterRegistrationBean<>((req, res, chain) -> {
                HttpServletRequest request = (HttpServletRequest) req;
                String user = request.getHeader(USER);
                chain.doFilter(user == null ? request : new HttpServletRequestWrapper(request) {
                    @Override
                    public Principal getUserPrincipal() {
                        return () -> user;
                    }
                }, res);
            });
            registration.setOrder(Ordered.HIGHEST_PRECEDENCE);
            return registration;
        }
    }

    /** A declared business refusal: stored as the call's outcome and thrown again to every retry. */
    public static class InsufficientFundsException extends RuntimeException {
        private final String account;
        private final long missingCents;

        public InsufficientFundsException(String account, long missingCents) {
            super("account " + account + " lacks " + missingCents + " cents");
            this.account = account;
            this.missingCents = missingCents;
        }

        public String getAccount() {
            return account;
        }

        public long getMissingCents() {
            return missingCents;
        }
    }

    /** What the methods return: who ran it, and the how-many-th run of its key this was. */
    public record Receipt(String orderNumber, String caller, int run) {
    }

    /** What the test sees of the service and steers in it; apart from it, since the service is a proxy. */
    static class Probe {
        /** Runs per order number, whoever the caller. */
        final Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        /** Order numbers whose next run fails with an exception that is no declared outcome. */
        final Map<String, RuntimeException> failNext = new ConcurrentHashMap<>();

        int runs(String orderNumber) {
            AtomicInteger n = runs.get(orderNumber);
            return n == null ? 0 : n.get();
        }
    }

    public static class Orders {
        private final Probe probe;

        Orders(Probe probe) {
            this.probe = probe;
        }

        @Idempotent(key = "#orderNumber")
        @Transactional
        public Receipt pay(String caller, String orderNumber) {
            return receipt(caller, orderNumber);
        }

        @Idempotent(key = "#orderNumber", scope = Idempotent.Scope.SHARED, fingerprint = "#orderNumber")
        public Receipt payShared(String caller, String orderNumber) {
            return receipt(caller, orderNumber);
        }

        @Idempotent(key = "#orderNumber", retention = "7d")
        public Receipt payKeptAWeek(String caller, String orderNumber) {
            return receipt(caller, orderNumber);
        }

        @Idempotent(key = "#orderNumber", replayedExceptions = InsufficientFundsException.class)
        @Transactional
        public Receipt payFromAccount(String caller, String orderNumber) {
            Receipt receipt = receipt(caller, orderNumber);
            RuntimeException failure = probe.failNext.remove(orderNumber);
            if (failure != null) {
                throw failure;
            }
            if (orderNumber.startsWith("broke-")) {
                throw new InsufficientFundsException("acc-" + caller, 100L * receipt.run());
            }
            return receipt;
        }

        private Receipt receipt(String caller, String orderNumber) {
            return new Receipt(orderNumber, caller, probe.runs.computeIfAbsent(orderNumber, o -> new AtomicInteger())
                    .incrementAndGet());
        }
    }

    @RestController
    static class OrdersController {
        private final Orders orders;

        OrdersController(Orders orders) {
            this.orders = orders;
        }

        @PostMapping("/orders/{orderNumber}")
        Receipt pay(@PathVariable String orderNumber, Principal principal) {
            return orders.pay(principal == null ? null : principal.getName(), orderNumber);
        }

        @PostMapping("/shared/{orderNumber}")
        Receipt payShared(@PathVariable String orderNumber, Principal principal) {
            return orders.payShared(principal == null ? null : principal.getName(), orderNumber);
        }

        @PostMapping("/weekly/{orderNumber}")
        Receipt payKeptAWeek(@PathVariable String orderNumber, Principal principal) {
            return orders.payKeptAWeek(principal.getName(), orderNumber);
        }

        @PostMapping("/accounts/{orderNumber}")
        Receipt payFromAccount(@PathVariable String orderNumber, Principal principal) {
            return orders.payFromAccount(principal.getName(), orderNumber);
        }

        /** The application's own mapping of its refusal: 402 with what is missing. */
        @ExceptionHandler(InsufficientFundsException.class)
        ResponseEntity<ProblemDetail> insufficientFunds(InsufficientFundsException e) {
            ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.PAYMENT_REQUIRED, e.getMessage());
            problem.setProperty("account", e.getAccount());
            problem.setProperty("missingCents", e.getMissingCents());
            return ResponseEntity.status(HttpStatus.PAYMENT_REQUIRED).contentType(MediaType.APPLICATION_PROBLEM_JSON)
                    .body(problem);
        }
    }

    @LocalServerPort
    int port;
    @Autowired
    Probe probe;
    @Autowired
    JdbcTemplate jdbc;

    private final HttpClient http = HttpClient.newHttpClient();
    private String order;

    @AfterAll
    static void dropTable() throws Exception {
        SpringPostgres.drop(RECORDS);
    }

    @BeforeEach
    void newOrder() {
        order = "ord-" + UUID.randomUUID();
    }

    @Test
    void anotherCallerWithTheSameKeyRunsItsOwnCallAndGetsItsOwnResult() throws Exception {
        HttpResponse<String> alice = post("alice", "/orders/" + order);
        HttpResponse<String> bob = post("bob", "/orders/" + order);
        HttpResponse<String> aliceAgain = post("alice", "/orders/" + order);
        HttpResponse<String> bobAgain = post("bob", "/orders/" + order);

        assertThat(alice.statusCode()).isEqualTo(200);
        assertThat(alice.body()).contains("\"caller\":\"alice\"", "\"run\":1");
        assertThat(bob.statusCode()).isEqualTo(200);
        assertThat(bob.body()).contains("\"caller\":\"bob\"", "\"run\":2");
        assertThat(aliceAgain.body()).isEqualTo(alice.body());
        assertThat(bobAgain.body()).isEqualTo(bob.body());
        assertThat(probe.runs(order)).isEqualTo(2);
    }

    @Test
    void noCallerIsRefusedWith401AndTheMethodDoesNotRun() throws Exception {
        assertRefusedAsUnauthenticated(post(null, "/orders/" + order));
    }

    @Test
    void aCallerWithABlankNameIsNoCaller() throws Exception {
        assertRefusedAsUnauthenticated(post(" ", "/orders/" + order));
        assertRefusedAsUnauthenticated(post("", "/orders/" + order));
    }

    @Test
    void theFilterTakesACallerWithABlankNameForNoCallerToo() throws Exception {
        HttpResponse<String> blank = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/orders/" + order)).header(USER, " ").header("Idempotency-Key", order)
                .POST(HttpRequest.BodyPublishers.noBody()).build(), BodyHandlers.ofString());

        assertRefusedAsUnauthenticated(blank);
        assertThat(blank.body()).as("refused by the filter, before the method").contains("Idempotency-Key");
    }

    /** 401 problem+json, and nothing ran or was stored. */
    private void assertRefusedAsUnauthenticated(HttpResponse<String> response) {
        assertThat(response.statusCode()).isEqualTo(401);
        assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(response.body()).contains("\"type\":\"/problems/unauthenticated\"", "\"status\":401");
        assertThat(probe.runs(order)).isZero();
        assertThat(records()).isZero();
    }

    @Test
    void aSharedScopeReplaysAcrossCallers() throws Exception {
        HttpResponse<String> alice = post("alice", "/shared/" + order);
        HttpResponse<String> bob = post("bob", "/shared/" + order);
        HttpResponse<String> anonymous = post(null, "/shared/" + order);

        assertThat(alice.statusCode()).isEqualTo(200);
        assertThat(alice.body()).contains("\"caller\":\"alice\"");
        assertThat(bob.statusCode()).isEqualTo(200);
        assertThat(bob.body()).isEqualTo(alice.body());
        assertThat(anonymous.body()).isEqualTo(alice.body());
        assertThat(probe.runs(order)).isEqualTo(1);
        assertThat(jdbc.queryForObject("SELECT scope FROM " + RECORDS + " WHERE idem_key = ?", String.class, order))
                .isEqualTo("shared|" + Orders.class.getName() + ".payShared");
    }

    @Test
    void theOperationPartOfTheScopeIsTheFullyQualifiedMethod() throws Exception {
        post("alice", "/orders/" + order);

        assertThat(jdbc.queryForObject("SELECT scope FROM " + RECORDS + " WHERE idem_key = ?", String.class, order))
                .isEqualTo("principal:alice|" + Orders.class.getName() + ".pay");
    }

    @Test
    void aMethodsOwnRetentionIsTheStoredRecordsExpiry() throws Exception {
        post("alice", "/weekly/" + order);
        String daily = order + "-daily";
        post("alice", "/orders/" + daily);

        assertThat(hoursKept(order)).isEqualTo(7 * 24);
        assertThat(hoursKept(daily)).as("retrysafe.policy.retention").isEqualTo(24);
    }

    @Test
    void aDeclaredBusinessExceptionIsStoredAndReplayedWithoutRunningAgain() throws Exception {
        String broke = "broke-" + order;
        HttpResponse<String> first = post("alice", "/accounts/" + broke);
        HttpResponse<String> retry = post("alice", "/accounts/" + broke);

        assertThat(first.statusCode()).isEqualTo(402);
        assertThat(first.body()).contains("\"account\":\"acc-alice\"", "\"missingCents\":100");
        assertThat(retry.statusCode()).isEqualTo(402);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(probe.runs(broke)).isEqualTo(1);
        assertThat(status(broke)).isEqualTo("COMPLETED");
    }

    @Test
    void anExceptionNotDeclaredReleasesTheKeyAndTheRetryRuns() throws Exception {
        probe.failNext.put(order, new IllegalStateException("provider unreachable"));

        HttpResponse<String> first = post("alice", "/accounts/" + order);

        assertThat(first.statusCode()).isEqualTo(500);
        assertThat(status(order)).as("nothing kept").isNull();

        HttpResponse<String> retry = post("alice", "/accounts/" + order);

        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(retry.body()).contains("\"run\":2");
        assertThat(probe.runs(order)).isEqualTo(2);
        assertThat(status(order)).isEqualTo("COMPLETED");
    }

    private HttpResponse<String> post(String user, String path) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .POST(HttpRequest.BodyPublishers.noBody());
        if (user != null) {
            request.header(USER, user);
        }
        return http.send(request.build(), BodyHandlers.ofString());
    }

    private int records() {
        return jdbc.queryForObject("SELECT count(*) FROM " + RECORDS + " WHERE idem_key = ?", Integer.class, order);
    }

    private String status(String key) {
        List<String> statuses = jdbc.queryForList("SELECT status FROM " + RECORDS + " WHERE idem_key = ?",
                String.class, key);
        return statuses.isEmpty() ? null : statuses.get(0);
    }

    /** Whole hours between the record's completion and its expiry. */
    private long hoursKept(String key) {
        return jdbc.queryForObject("SELECT round(extract(epoch FROM expires_at - completed_at) / 3600) FROM " + RECORDS
                + " WHERE idem_key = ?", Long.class, key);
    }
}
