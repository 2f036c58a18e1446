package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
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
    /** The starter logs through System.Logger, which is java.util.logging unless the application says otherwise. */
    private final Logger starterLogger = Logger.getLogger("io.retrysafe.spring");
    private final List<String> warnings = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                warnings.add(record.getMessage());
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @BeforeEach
    void listen() {
        starterLogger.addHandler(handler);
    }

    @AfterEach
    void stopListening() {
        starterLogger.removeHandler(handler);
    }

    @Test
    void theInMemoryStoreWarnsThatItProtectsOneInstanceOnly() {
        runner.withPropertyValues("retrysafe.http.scope=hashed-header", "retrysafe.http.scope-header=X-Api-Key")
                .run(context -> assertThat(context).hasNotFailed());

        assertThat(warnings).anySatisfy(w -> assertThat(w).contains("protects one instance only"));
        assertThat(warnings).as("a hashed header is not a scope a caller can name")
                .noneSatisfy(w -> assertThat(w).contains("retrysafe.http.scope="));
    }

    @Test
    void aGlobalScopeWarns() {
        runner.withPropertyValues("retrysafe.http.scope=global").run(context -> assertThat(context).hasNotFailed());

        assertThat(warnings).anySatisfy(w -> assertThat(w).contains("retrysafe.http.scope=global: every caller "
                + "shares one key space"));
    }

    @Test
    void aHeaderScopeWarns() {
        runner.withPropertyValues("retrysafe.http.scope=header", "retrysafe.http.scope-header=X-Tenant")
                .run(context -> assertThat(context).hasNotFailed());

        assertThat(warnings).anySatisfy(w -> assertThat(w).contains("retrysafe.http.scope=header: keys are scoped "
                + "to the value of X-Tenant"));
    }
}
