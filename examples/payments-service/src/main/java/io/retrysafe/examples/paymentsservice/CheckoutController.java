package io.retrysafe.examples.paymentsservice;

import io.retrysafe.Fingerprint;
import io.retrysafe.Fingerprinter;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.MalformedJsonException;
import io.retrysafe.Outcome;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.examples.paymentscommon.PaymentProblems;
import io.retrysafe.examples.paymentsservice.ProviderClient.ProviderUnavailableException;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.ProblemType;
import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.http.HttpServletRequest;
import java.sql.Connection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /checkouts}: a checkout that charges a card at the payment provider ({@link Checkout}). The key is
 * claimed by the phased engine, not by the RetrySafe filter (the route is deliberately not among
 * {@code retrysafe.http.routes}): it is read, scoped to the caller and the request fingerprinted exactly as the
 * filter does for its routes, and every refusal and failure is answered with the filter's problems.
 */
@RestController
class CheckoutController {
    /** The route as the filter would see it: its key's scope and fingerprint are the filter's. */
    static final HttpRoute ROUTE = HttpRoute.of("POST", "/checkouts").keyRequired(true)
            .jsonMembers("/account", "/amount", "/card").build();
    /** Seconds a client waits before retrying after the provider failed (nothing was charged). */
    static final int PROVIDER_RETRY_AFTER_SECONDS = 1;
    private static final Fingerprinter FINGERPRINTER = HttpSemantics.fingerprinter(ROUTE);

    private final PhasedRetrySafe<Connection> phased;
    private final PhasedOperation<CheckoutRequest, CheckoutAnswer, Connection> checkout;
    private final KeyRules keyRules;
    private final ScopeResolver scope;

    /** With {@code retrysafe.enabled=false} there is no phased engine: checkouts are refused (501). */
    CheckoutController(ObjectProvider<PhasedRetrySafe<Connection>> phased,
            PhasedOperation<CheckoutRequest, CheckoutAnswer, Connection> checkout, ObjectProvider<KeyRules> keyRules,
            ObjectProvider<ScopeResolver> scope) {
        this.phased = phased.getIfAvailable();
        this.checkout = checkout;
        this.keyRules = keyRules.getIfAvailable(() -> KeyRules.DEFAULT);
        this.scope = scope.getIfAvailable(ScopeResolver::principal);
    }

    @PostMapping("/checkouts")
    ResponseEntity<?> create(HttpServletRequest request, @RequestBody(required = false) byte[] body) {
        if (phased == null) {
            return PaymentProblems.response(501, "checkouts-unavailable", "Checkouts unavailable", "a checkout calls the "
                    + "payment provider and needs RetrySafe's phased operations, which are switched off here");
        }
        byte[] bytes = body == null ? new byte[0] : body;
        String keyValue;
        try {
            keyValue = keyRules.parseHeader(Collections.list(request.getHeaders(HttpSemantics.KEY_HEADER)));
        } catch (InvalidKeyException e) {
            return http(HttpSemantics.keyRefused(e));
        }
        String caller = scope.resolve(request);
        if (caller == null) {
            return http(HttpSemantics.noCaller());
        }
        IdempotencyKey key = keyRules.key(HttpSemantics.scope(caller, ROUTE), keyValue);
        Fingerprint fingerprint;
        CheckoutRequest.Body parsed;
        try {
            fingerprint = HttpSemantics.fingerprint(ROUTE, FINGERPRINTER, request.getMethod(),
                    HttpPaths.normalise(request.getRequestURI()), request.getQueryString(),
                    name -> Collections.list(request.getHeaders(name)), request.getContentType(), bytes);
            parsed = CheckoutRequest.Body.parse(bytes);
        } catch (MalformedJsonException e) {
            return http(ProblemType.MALFORMED_JSON.answer("the body is not a JSON checkout: " + e.getMessage(), null,
                    null));
        }
        CheckoutRequest checkoutRequest = CheckoutRequest.of(request.getUserPrincipal().getName(), parsed);
        String invalid = checkoutRequest.invalidReason();
        if (invalid != null) {
            return PaymentProblems.invalidRequest(invalid);
        }
        Outcome<CheckoutAnswer> outcome;
        try {
            outcome = phased.execute(key, fingerprint, checkout, checkoutRequest);
        } catch (ProviderUnavailableException e) {
            // Released: nothing was charged, and the retry resumes after the hold.
            return http(ProblemType.UPSTREAM_UNAVAILABLE.answer("the payment provider is unavailable; nothing was "
                    + "charged. Retry with the same Idempotency-Key", null,
                    java.time.Duration.ofSeconds(PROVIDER_RETRY_AFTER_SECONDS)));
        } catch (RuntimeException e) {
            HttpAnswer failure = HttpSemantics.failure(e);
            if (failure == null) {
                throw e;
            }
            return http(failure);
        }
        if (outcome instanceof Outcome.Executed<CheckoutAnswer> executed) {
            return http(executed.value().http());
        }
        if (outcome instanceof Outcome.Unprotected<CheckoutAnswer> unprotected) {
            return http(unprotected.value().http());
        }
        if (outcome instanceof Outcome.Replayed<CheckoutAnswer> replayed) {
            return http(HttpSemantics.replay(CheckoutAnswer.CODEC.encode(replayed.value())));
        }
        // In progress, key reused, store unavailable: no value to convert.
        @SuppressWarnings("unchecked")
        Outcome<StoredResponse> valueless = (Outcome<StoredResponse>) (Outcome<?>) outcome;
        return http(HttpSemantics.refusal(valueless));
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
