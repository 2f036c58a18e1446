package io.retrysafe.spring;

import io.retrysafe.FingerprintMismatchException;
import io.retrysafe.InProgressException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.RetrySafeException;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponseUnreadableException;
import io.retrysafe.UnauthenticatedException;
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
        // The details are fixed texts: a store's message names its table and quotes the driver (SQL,
        // hosts), and an operation's failure is the application's own. Both are logged, never answered.
        Problem problem;
        String detail;
        Duration retryAfter = null;
        if (e instanceof InProgressException p) {
            problem = Problem.IN_PROGRESS;
            detail = "a call with this key is still being processed; retry after the time in Retry-After";
            retryAfter = p.retryAfter();
        } else if (e instanceof FingerprintMismatchException) {
            problem = Problem.KEY_REUSED;
            detail = "this key was already used with a different request; use a new key for a new intent";
        } else if (e instanceof StoreUnavailableException s) {
            problem = e instanceof OutcomeUnknownException ? Problem.OUTCOME_UNKNOWN : Problem.STORE_UNAVAILABLE;
            detail = e instanceof OutcomeUnknownException
                    ? "the request was processed, but its outcome could not be recorded: it may have taken effect"
                    : "the idempotency store is unavailable; the request was not recorded, retry with the same key";
            retryAfter = s.retryAfter();
        } else if (e instanceof StoredResponseUnreadableException) {
            problem = Problem.STORED_RESPONSE_UNREADABLE;
            detail = "this key's request was processed earlier, but its stored response cannot be read; it is not "
                    + "processed again";
        } else if (e instanceof UnauthenticatedException) {
            problem = Problem.UNAUTHENTICATED;
            detail = "this call's key belongs to its caller, and there is none";
        } else if (e instanceof InvalidKeyException k) {
            problem = k.rule() == InvalidKeyException.Rule.MISSING ? Problem.MISSING_KEY : Problem.INVALID_KEY;
            detail = k.getMessage(); // the rule the key broke, in the key's own terms
        } else if (e instanceof MalformedJsonException j) {
            problem = Problem.MALFORMED_JSON;
            detail = j.getMessage(); // where the JSON the caller sent breaks
        } else {
            ProblemDetail generic = ProblemDetail.forStatus(HttpStatusCode.valueOf(e.httpStatus()));
            return ResponseEntity.status(e.httpStatus()).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(generic);
        }
        ProblemDetail body = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(problem.status()), detail);
        body.setType(URI.create(problem.type()));
        body.setTitle(problem.title());
        ResponseEntity.BodyBuilder response = ResponseEntity.status(problem.status())
                .contentType(MediaType.APPLICATION_PROBLEM_JSON);
        if (retryAfter != null) {
            response.header(HttpHeaders.RETRY_AFTER, Long.toString(Math.max(1, (retryAfter.toMillis() + 999) / 1000)));
        }
        return response.body(body);
    }
}
