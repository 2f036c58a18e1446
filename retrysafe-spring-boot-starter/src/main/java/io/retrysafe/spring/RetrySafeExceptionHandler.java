package io.retrysafe.spring;

import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.InProgressException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.RetrySafeException;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponseUnreadableException;
import io.retrysafe.servlet.Problem;
import java.net.URI;
import java.time.Duration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/**
 * Answers a {@link RetrySafeException} thrown by an {@link Idempotent} method with the same
 * problem documents (and {@code Retry-After}) as the filter.
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE + 100)
public class RetrySafeExceptionHandler {

    @ExceptionHandler(RetrySafeException.class)
    public ResponseEntity<ProblemDetail> handle(RetrySafeException e) {
        Problem problem;
        Duration retryAfter = null;
        if (e instanceof InProgressException p) {
            problem = Problem.IN_PROGRESS;
            retryAfter = p.retryAfter();
        } else if (e instanceof FingerprintMismatchException) {
            problem = Problem.KEY_REUSED;
        } else if (e instanceof StoreUnavailableException s) {
            problem = e instanceof OutcomeUnknownException ? Problem.OUTCOME_UNKNOWN : Problem.STORE_UNAVAILABLE;
            retryAfter = s.retryAfter();
        } else if (e instanceof StoredResponseUnreadableException) {
            problem = Problem.STORED_RESPONSE_UNREADABLE;
        } else if (e instanceof InvalidKeyException k) {
            problem = k.rule() == InvalidKeyException.Rule.MISSING ? Problem.MISSING_KEY : Problem.INVALID_KEY;
        } else {
            ProblemDetail detail = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(e.httpStatus()), e.getMessage());
            return ResponseEntity.status(e.httpStatus()).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(detail);
        }
        ProblemDetail detail = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(problem.status()), e.getMessage());
        detail.setType(URI.create(problem.type()));
        detail.setTitle(problem.title());
        ResponseEntity.BodyBuilder response = ResponseEntity.status(problem.status())
                .contentType(MediaType.APPLICATION_PROBLEM_JSON);
        if (retryAfter != null) {
            response.header(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, (retryAfter.toMillis() + 999) / 1000)));
        }
        return response.body(detail);
    }
}
