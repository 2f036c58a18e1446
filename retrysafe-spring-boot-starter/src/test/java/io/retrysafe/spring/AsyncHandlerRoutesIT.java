package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.testservices.TestDatabases;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

/**
 * Transactional mode on the real PostgreSQL, with Spring MVC handlers: a protected route that an asynchronous
 * handler serves is found when the application starts, and runs in standalone mode, said in a WARN line; with
 * {@code retrysafe.http.async-transactional=fail} the application does not start. Other routes stay transactional.
 */
class AsyncHandlerRoutesIT {
    private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, BootLine.DATA_SOURCE,
                    BootLine.DATA_SOURCE_TRANSACTION_MANAGER, RetrySafeAutoConfiguration.class,
                    RetrySafeWebAutoConfiguration.class))
            .withUserConfiguration(Mvc.class)
            .withPropertyValues("spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                    "spring.datasource.username=" + TestDatabases.postgresUser(),
                    "spring.datasource.password=" + TestDatabases.postgresPassword(),
                    "retrysafe.http.scope=hashed-header", "retrysafe.http.scope-header=X-Api-Key",
                    "retrysafe.http.routes[0].method=POST", "retrysafe.http.routes[0].pattern=/orders",
                    // Served by /orders/{id}'s asynchronous handler, and the other way round for /items/**.
                    "retrysafe.http.routes[1].method=POST", "retrysafe.http.routes[1].pattern=/orders/later",
                    "retrysafe.http.routes[2].method=POST", "retrysafe.http.routes[2].pattern=/items/**",
                    // The asynchronous handler of /items/{id} takes POST only.
                    "retrysafe.http.routes[3].method=PATCH", "retrysafe.http.routes[3].pattern=/items/{id}");
    private StarterWarnings log;

    @Configuration(proxyBeanMethods = false)
    @EnableWebMvc
    @Import(Handlers.class)
    static class Mvc {
    }

    @RestController
    static class Handlers {
        @PostMapping("/orders")
        String order() {
            return "now";
        }

        @PostMapping("/orders/{id}")
        CompletableFuture<String> orderLater(@PathVariable String id) {
            return CompletableFuture.completedFuture(id);
        }

        @PostMapping("/items/{id}")
        DeferredResult<String> item(@PathVariable String id) {
            return new DeferredResult<>();
        }

        @PutMapping("/items/{id}")
        CompletableFuture<String> replaceItem(@PathVariable String id) {
            return CompletableFuture.completedFuture(id);
        }
    }

    @BeforeEach
    void listen() {
        log = StarterWarnings.listen();
    }

    @AfterEach
    void stopListening() {
        log.close();
    }

    private static MockHttpServletRequest request(String method, String path) {
        return new MockHttpServletRequest(method, path);
    }

    @Test
    void aRouteAnAsynchronousHandlerServesRunsInStandaloneModeAndSaysSo() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);

            assertThat(executor.isAsyncSupported(request("POST", "/orders/later"))).as("standalone").isTrue();
            assertThat(executor.isAsyncSupported(request("POST", "/items/7"))).as("standalone").isTrue();
            assertThat(executor.isAsyncSupported(request("POST", "/orders"))).as("transactional").isFalse();
            assertThat(executor.isAsyncSupported(request("PATCH", "/items/7"))).as("transactional").isFalse();
        });

        assertThat(log.warnings()).singleElement().asString()
                .contains("POST /orders/later has an asynchronous handler: Handlers#orderLater (CompletableFuture); "
                        + "POST /items/** has an asynchronous handler: Handlers#item (DeferredResult)")
                .contains("these routes run in standalone mode")
                .contains("retrysafe.http.async-transactional=fail")
                .doesNotContain("POST /orders is", "PATCH");
    }

    @Test
    void withAsyncTransactionalFailTheApplicationDoesNotStart() {
        runner.withPropertyValues("retrysafe.http.async-transactional=fail").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasMessageContaining("retrysafe.http.async-transactional=fail, "
                    + "and POST /orders/later has an asynchronous handler: Handlers#orderLater (CompletableFuture); "
                    + "POST /items/** has an asynchronous handler: Handlers#item (DeferredResult)");
        });
    }

    @Test
    void withoutAnAsynchronousHandlerOnAProtectedRouteNothingChanges() {
        runner.withPropertyValues("retrysafe.http.routes[1].method=PUT", "retrysafe.http.routes[1].pattern=/orders",
                "retrysafe.http.routes[2].method=POST", "retrysafe.http.routes[2].pattern=/things/**").run(context -> {
                    assertThat(context).hasNotFailed();
                    IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);
                    assertThat(executor.isAsyncSupported(request("POST", "/orders/later"))).isFalse();
                });

        assertThat(log.warnings()).noneSatisfy(w -> assertThat(w).contains("standalone mode"));
    }
}
