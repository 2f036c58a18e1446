package io.retrysafe.examples.paymentsservice;

import io.retrysafe.KeyRules;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.examples.paymentscommon.PaymentProblems;
import io.retrysafe.examples.paymentsservice.ProviderClient.ProviderUnavailableException;
import io.retrysafe.http.Admission;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.ProblemType;
import io.retrysafe.servlet.PhasedRequests;
import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.http.HttpServletRequest;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.json.JsonParseException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /checkouts}: a checkout that charges a card at the payment provider ({@link Checkout}). The key is
 * claimed by the phased engine, not by the RetrySafe filter (the route is deliberately not among
 * {@code retrysafe.http.routes}): {@link PhasedRequests} reads it, scopes it to the caller and fingerprints the
 * request exactly as the filter does for its routes, and answers every refusal and failure with the filter's
 * problems.
 */
@RestController
class CheckoutController {
    /** The route as the filter would see it: its key's scope and fingerprint are the filter's. */
    static final HttpRoute ROUTE = HttpRoute.of("POST", "/checkouts").keyRequired(true)
            .jsonMembers("/account", "/amount", "/card").build();
    /** Seconds a client waits before retrying after the provider failed (nothing was charged). */
    static final int PROVIDER_RETRY_AFTER_SECONDS = 1;

    private final PhasedRequests<Connection> checkouts;
    private final PhasedOperation<CheckoutRequest, CheckoutAnswer, Connection> checkout;

    /** With {@code retrysafe.enabled=false} there is no phased engine: checkouts are refused (501). */
    CheckoutController(ObjectProvider<PhasedRetrySafe<Connection>> phased,
            PhasedOperation<CheckoutRequest, CheckoutAnswer, Connection> checkout, ObjectProvider<KeyRules> keyRules,
            ObjectProvider<ScopeResolver> scope) {
        PhasedRetrySafe<Connection> engine = phased.getIfAvailable();
        this.checkouts = engine == null ? null : PhasedRequests.of(engine, ROUTE,
                keyRules.getIfAvailable(() -> KeyRules.DEFAULT), scope.getIfAvailable(ScopeResolver::principal));
        this.checkout = checkout;
    }

    @PostMapping("/checkouts")
    ResponseEntity<?> create(HttpServletRequest request, @RequestBody(required = false) byte[] body) {
        if (checkouts == null) {
            return PaymentProblems.response(501, "checkouts-unavailable", "Checkouts unavailable", "a checkout calls the "
                    + "payment provider and needs RetrySafe's phased operations, which are switched off here");
        }
        byte[] bytes = body == null ? new byte[0] : body;
        Admission admission = checkouts.admit(request, bytes);
        if (admission instanceof Admission.Refused refused) {
            return http(refused.answer());
        }
        CheckoutRequest.Body parsed;
        try {
            parsed = CheckoutRequest.Body.parse(bytes);
        } catch (JsonParseException e) {
            return http(ProblemType.MALFORMED_JSON.answer("the body is not a JSON checkout: " + e.getMessage(), null,
                    null));
        }
        CheckoutRequest checkoutRequest = CheckoutRequest.of(request.getUserPrincipal().getName(), parsed);
        String invalid = checkoutRequest.invalidReason();
        if (invalid != null) {
            return PaymentProblems.invalidRequest(invalid);
        }
        try {
            return http(checkouts.execute((Admission.Admitted) admission, checkout, checkoutRequest));
        } catch (ProviderUnavailableException e) {
            // Released: nothing was charged, and the retry resumes after the hold.
            return http(ProblemType.UPSTREAM_UNAVAILABLE.answer("the payment provider is unavailable; nothing was "
                    + "charged. Retry with the same Idempotency-Key", null,
                    java.time.Duration.ofSeconds(PROVIDER_RETRY_AFTER_SECONDS)));
        }
    }

    /** A shared answer as Spring's response. */
    static ResponseEntity<byte[]> http(HttpAnswer answer) {
        HttpHeaders headers = new HttpHeaders();
        for (Map.Entry<String, List<String>> header : answer.headers().entrySet()) {
            headers.addAll(header.getKey(), header.getValue());
        }
        return ResponseEntity.status(answer.status()).headers(headers).body(answer.body());
    }
}
