package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.Backoff;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.util.backoff.BackOffExecution;

class SpringBackOffTest {

    @Test
    void waitsAsTheBackoffBeforeEachRetryAndStopsAfterMaxAttemptsRuns() {
        Backoff backoff = Backoff.exponential(Duration.ofMillis(200), Duration.ofMillis(500));
        BackOffExecution execution = new SpringBackOff(backoff, 4).start();

        assertThat(execution.nextBackOff()).as("before retry 1").isEqualTo(200);
        assertThat(execution.nextBackOff()).as("before retry 2").isEqualTo(400);
        assertThat(execution.nextBackOff()).as("before retry 3, capped").isEqualTo(500);
        assertThat(execution.nextBackOff()).as("after the fourth run").isEqualTo(BackOffExecution.STOP);
    }

    @Test
    void eachStartCountsAfresh() {
        SpringBackOff backOff = new SpringBackOff(Backoff.fixed(Duration.ofMillis(50)), 2);
        BackOffExecution first = backOff.start();
        assertThat(first.nextBackOff()).isEqualTo(50);
        assertThat(first.nextBackOff()).isEqualTo(BackOffExecution.STOP);

        assertThat(backOff.start().nextBackOff()).isEqualTo(50);
    }

    @Test
    void oneAttemptMeansNoRetry() {
        assertThat(new SpringBackOff(Backoff.fixed(Duration.ofMillis(50)), 1).start().nextBackOff())
                .isEqualTo(BackOffExecution.STOP);
    }

    @Test
    void refusesLessThanOneAttempt() {
        assertThatThrownBy(() -> new SpringBackOff(Backoff.fixed(Duration.ofMillis(50)), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("maxAttempts must be at least 1, but was 0");
    }
}
