package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.InProgressException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.servlet.Problem;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/** An {@link Idempotent} method's refusal, answered by a controller as the filter answers it. */
class RetrySafeExceptionHandlerTest {
    private final RetrySafeExceptionHandler handler = new RetrySafeExceptionHandler();

    @Test
    void inProgressIs409WithRetryAfterInWholeSeconds() {
        ResponseEntity<ProblemDetail> response = handler.handle(
                new InProgressException("busy", Duration.ofMillis(1500)));

        assertProblem(response, Problem.IN_PROGRESS);
        assertThat(response.getHeaders().getFirst("Retry-After")).isEqualTo("2");
        assertThat(response.getBody().getDetail()).contains("retry after the time in Retry-After");
    }

    @Test
    void fingerprintMismatchIs422KeyReused() {
        ResponseEntity<ProblemDetail> response = handler.handle(new FingerprintMismatchException("other request"));

        assertProblem(response, Problem.KEY_REUSED);
        assertThat(response.getHeaders().getFirst("Retry-After")).isNull();
    }

    @Test
    void storeUnavailableIs503WithRetryAfter() {
        ResponseEntity<ProblemDetail> response = handler.handle(
                new StoreUnavailableException("jdbc:x", Duration.ofSeconds(3),
                        "failed to claim: ERROR: relation \"orders_keys\" does not exist (SQLState 42P01)", null));

        assertProblem(response, Problem.STORE_UNAVAILABLE);
        assertThat(response.getHeaders().getFirst("Retry-After")).isEqualTo("3");
        assertThat(response.getBody().getDetail()).as("the store's message names its table and quotes the driver")
                .doesNotContain("orders_keys", "SQLState", "jdbc").contains("retry with the same key");
    }

    @Test
    void missingAndInvalidKeysAre400OfTheirOwnTypes() {
        assertProblem(handler.handle(new InvalidKeyException(InvalidKeyException.Rule.MISSING, "no key")),
                Problem.MISSING_KEY);
        assertProblem(handler.handle(new InvalidKeyException(InvalidKeyException.Rule.TOO_LONG, "too long")),
                Problem.INVALID_KEY);
    }

    private static void assertProblem(ResponseEntity<ProblemDetail> response, Problem problem) {
        assertThat(response.getStatusCode().value()).isEqualTo(problem.status());
        assertThat(response.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
        assertThat(response.getBody().getType()).isEqualTo(URI.create(problem.type()));
        assertThat(response.getBody().getTitle()).isEqualTo(problem.title());
        assertThat(response.getBody().getStatus()).isEqualTo(problem.status());
    }
}
