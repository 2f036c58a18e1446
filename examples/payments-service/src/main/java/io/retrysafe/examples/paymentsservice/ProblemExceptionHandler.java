package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.PaymentProblems;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** Answers a {@link Problems.ProblemException} with its problem document, and a lost database with 503. */
@RestControllerAdvice
class ProblemExceptionHandler {
    /** Seconds a client waits before retrying after the database went away: a restart or failover. */
    static final int DATABASE_RETRY_AFTER_SECONDS = 1;

    @ExceptionHandler(Problems.ProblemException.class)
    ResponseEntity<ProblemDetail> handle(Problems.ProblemException e) {
        return e.response();
    }

    /**
     * The database went away while a handler ran (a restart, a cut connection, no connection to be
     * had, a deadlock victim): {@code 503} + {@code Retry-After}, which clients retry, instead of
     * Spring Boot's {@code 500}, which they do not. Nothing of the handler's transaction committed,
     * and RetrySafe releases the key of any 5xx, so the retry runs the payment again, once.
     */
    @ExceptionHandler({DataAccessResourceFailureException.class, TransientDataAccessException.class,
            CannotCreateTransactionException.class})
    ResponseEntity<ProblemDetail> databaseUnavailable(RuntimeException e) {
        ResponseEntity<ProblemDetail> problem = PaymentProblems.response(503, "database-unavailable", "Database unavailable",
                "the payment was not made; retry with the same Idempotency-Key");
        return ResponseEntity.status(problem.getStatusCode()).headers(problem.getHeaders())
                .header(HttpHeaders.RETRY_AFTER, Integer.toString(DATABASE_RETRY_AFTER_SECONDS)).body(problem.getBody());
    }
}
