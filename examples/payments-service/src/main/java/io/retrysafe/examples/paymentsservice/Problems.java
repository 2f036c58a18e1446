package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.PaymentProblems;
import io.retrysafe.servlet.Problem;
import java.net.URI;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/**
 * What this service answers beside the payments API's problems ({@link PaymentProblems}): RetrySafe's
 * own problem types for its conditional updates, and the exception that carries a problem out of a
 * method that cannot return one.
 */
final class Problems {

    private Problems() {
    }

    /** One of RetrySafe's own problem types (e.g. 412 stale-version, 428 version-required). */
    static ResponseEntity<ProblemDetail> response(Problem problem, String detail) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(problem.status()), detail);
        p.setType(URI.create(problem.type()));
        p.setTitle(problem.title());
        return PaymentProblems.response(p);
    }

    /** Thrown where a method cannot return a problem (an {@code @Idempotent} method returns its receipt). */
    static final class ProblemException extends RuntimeException {
        private static final long serialVersionUID = 1L;
        private final transient ResponseEntity<ProblemDetail> response;

        ProblemException(ResponseEntity<ProblemDetail> response) {
            super(response.getBody() == null ? null : response.getBody().getDetail(), null, false, false);
            this.response = response;
        }

        ResponseEntity<ProblemDetail> response() {
            return response;
        }
    }
}
