package io.retrysafe.examples.paymentsservice;

import io.retrysafe.servlet.Problem;
import java.net.URI;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/**
 * The service's own RFC 9457 problems; their types live under {@code /problems/} like RetrySafe's
 * ({@link Problem}), so a client branches on {@code type} alone.
 */
final class Problems {
    static final String INVALID_REQUEST = "invalid-request";

    private Problems() {
    }

    static ProblemDetail detail(int status, String slug, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(status), detail);
        problem.setType(URI.create(Problem.TYPE_BASE + slug));
        problem.setTitle(title);
        return problem;
    }

    static ResponseEntity<ProblemDetail> response(ProblemDetail problem) {
        return ResponseEntity.status(problem.getStatus()).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(problem);
    }

    static ResponseEntity<ProblemDetail> response(int status, String slug, String title, String detail) {
        return response(detail(status, slug, title, detail));
    }

    /** One of RetrySafe's own problem types (e.g. 412 stale-version, 428 version-required). */
    static ResponseEntity<ProblemDetail> response(Problem problem, String detail) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(problem.status()), detail);
        p.setType(URI.create(problem.type()));
        p.setTitle(problem.title());
        return response(p);
    }

    static ResponseEntity<ProblemDetail> invalidRequest(String detail) {
        return response(400, INVALID_REQUEST, "Invalid request", detail);
    }

    static ResponseEntity<ProblemDetail> insufficientFunds(Ledger.InsufficientFunds refused) {
        ProblemDetail p = detail(402, "insufficient-funds", "Insufficient funds", "account " + refused.account()
                + " has " + refused.balance() + ", the payment needs " + refused.amount());
        p.setProperty("balance", refused.balance());
        return response(p);
    }

    static ResponseEntity<ProblemDetail> unknownAccount(String account) {
        return response(404, "unknown-account", "Unknown account", "there is no account " + account);
    }

    static ResponseEntity<ProblemDetail> notFound(String detail) {
        return response(404, "not-found", "Not found", detail);
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
