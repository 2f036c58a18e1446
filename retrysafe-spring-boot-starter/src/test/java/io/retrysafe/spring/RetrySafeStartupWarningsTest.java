package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/**
 * Configurations that start, but protect less than a user may think, say so at start-up with a
 * WARN line: a scope every caller shares, a scope a caller can name, keys kept in one process's memory.
 */
class RetrySafeStartupWarningsTest {
    private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, RetrySafeAutoConfiguration.class,
                    RetrySafeWebAutoConfiguration.class));
    private StarterWarnings log;

    @BeforeEach
    void listen() {
        log = StarterWarnings.listen();
    }

    @AfterEach
    void stopListening() {
        log.close();
    }

    @Test
    void theInMemoryStoreWarnsThatItProtectsOneInstanceOnly() {
        runner.withPropertyValues("retrysafe.http.scope=hashed-header", "retrysafe.http.scope-header=X-Api-Key")
                .run(context -> assertThat(context).hasNotFailed());

        assertThat(log.warnings()).anySatisfy(w -> assertThat(w).contains("protects one instance only"));
        assertThat(log.warnings()).as("a hashed header is not a scope a caller can name")
                .noneSatisfy(w -> assertThat(w).contains("retrysafe.http.scope="));
    }

    @Test
    void aGlobalScopeWarns() {
        runner.withPropertyValues("retrysafe.http.scope=global").run(context -> assertThat(context).hasNotFailed());

        assertThat(log.warnings()).anySatisfy(w -> assertThat(w).contains("retrysafe.http.scope=global: every caller "
                + "shares one key space"));
    }

    @Test
    void aHeaderScopeWarns() {
        runner.withPropertyValues("retrysafe.http.scope=header", "retrysafe.http.scope-header=X-Tenant")
                .run(context -> assertThat(context).hasNotFailed());

        assertThat(log.warnings()).anySatisfy(w -> assertThat(w).contains("retrysafe.http.scope=header: keys are scoped "
                + "to the value of X-Tenant"));
    }
}
