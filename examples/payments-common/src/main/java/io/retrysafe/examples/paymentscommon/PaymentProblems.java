package io.retrysafe.examples.paymentscommon;

import io.retrysafe.http.ProblemType;
import java.net.URI;
import java.time.Instant;
import java.util.UUID;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/**
 * The answers of the payments API: a booking's {@code 201} and the services' own RFC 9457 problems,
 * whose types live under {@code /problems/} like RetrySafe's ({@link ProblemType}), so a client branches
 * on {@code type} alone.
 */
public final class PaymentProblems {
    private PaymentProblems() {
    }

    /** The body of {@code 201 Created}. */
    public record PaymentCreated(UUID id, String account, long amount, long balance, Instant createdAt) {
    }

    /** What {@code POST /payments} answers for a booking: {@code 201} with its {@code Location}, or the refusal. */
    public static ResponseEntity<?> answer(Booking booking) {
        if (booking instanceof Booking.Booked b) {
            return ResponseEntity.created(URI.create("/payments/" + b.paymentId()))
                    .body(new PaymentCreated(b.paymentId(), b.account(), b.amount(), b.balance(), b.createdAt()));
        }
        if (booking instanceof Booking.InsufficientFunds refused) {
            return insufficientFunds(refused);
        }
        return unknownAccount(((Booking.UnknownAccount) booking).account());
    }

    public static ProblemDetail detail(int status, String slug, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(status), detail);
        problem.setType(URI.create(ProblemType.TYPE_BASE + slug));
        problem.setTitle(title);
        return problem;
    }

    public static ResponseEntity<ProblemDetail> response(ProblemDetail problem) {
        return ResponseEntity.status(problem.getStatus()).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(problem);
    }

    public static ResponseEntity<ProblemDetail> response(int status, String slug, String title, String detail) {
        return response(detail(status, slug, title, detail));
    }

    public static ResponseEntity<ProblemDetail> invalidRequest(String detail) {
        return response(400, "invalid-request", "Invalid request", detail);
    }

    public static ResponseEntity<ProblemDetail> insufficientFunds(Booking.InsufficientFunds refused) {
        ProblemDetail p = detail(402, "insufficient-funds", "Insufficient funds", "account " + refused.account()
                + " has " + refused.balance() + ", the payment needs " + refused.amount());
        p.setProperty("balance", refused.balance());
        return response(p);
    }

    public static ResponseEntity<ProblemDetail> unknownAccount(String account) {
        return response(404, "unknown-account", "Unknown account", "there is no account " + account);
    }

    public static ResponseEntity<ProblemDetail> notFound(String detail) {
        return response(404, "not-found", "Not found", detail);
    }
}
