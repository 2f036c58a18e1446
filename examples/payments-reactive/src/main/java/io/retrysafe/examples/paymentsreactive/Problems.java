package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.http.ProblemType;
import java.net.URI;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/**
 * The service's own RFC 9457 problems; their types live under {@code /problems/} like RetrySafe's
 * ({@link ProblemType}), so a client branches on {@code type} alone.
 */
final class Problems {
    private Problems() {
    }

    static ResponseEntity<ProblemDetail> response(int status, String slug, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(status), detail);
        problem.setType(URI.create(ProblemType.TYPE_BASE + slug));
        problem.setTitle(title);
        return response(problem);
    }

    private static ResponseEntity<ProblemDetail> response(ProblemDetail problem) {
        return ResponseEntity.status(problem.getStatus()).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(problem);
    }

    static ResponseEntity<ProblemDetail> invalidRequest(String detail) {
        return response(400, "invalid-request", "Invalid request", detail);
    }

    static ResponseEntity<ProblemDetail> insufficientFunds(Ledger.InsufficientFunds refused) {
        ResponseEntity<ProblemDetail> response = response(402, "insufficient-funds", "Insufficient funds", "account "
                + refused.account() + " has " + refused.balance() + ", the payment needs " + refused.amount());
        response.getBody().setProperty("balance", refused.balance());
        return response;
    }

    static ResponseEntity<ProblemDetail> unknownAccount(String account) {
        return response(404, "unknown-account", "Unknown account", "there is no account " + account);
    }

    static ResponseEntity<ProblemDetail> notFound(String detail) {
        return response(404, "not-found", "Not found", detail);
    }
}
