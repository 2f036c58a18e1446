package io.retrysafe.conformance;

import java.net.URI;

/**
 * A service under {@link HttpConformance}: anything that answers {@code POST /payments} with an
 * {@code Idempotency-Key}, the way the payments example does, whatever stack stands behind it (the
 * servlet filter inside the service, the gateway in front of a service in another language, a
 * reactive stack). The suite sees it only over HTTP and through these few methods.
 *
 * <p>The API the suite expects:
 * <ul>
 *   <li>{@code POST /payments}, {@code Content-Type: application/json}, body
 *       {@code {"account":"<id>","amount":<cents>}}: {@code 201}, {@code Location: /payments/<uuid>},
 *       {@code Content-Type: application/json}, body
 *       {@code {"id":"<uuid>","account":…,"amount":…,"balance":<after>,"createdAt":…}}; a balance short of
 *       the amount: {@code 402} {@code /problems/insufficient-funds} with the {@code balance};</li>
 *   <li>a required {@code Idempotency-Key}, scoped to the authenticated user; the fingerprint is over
 *       the canonical JSON, so re-serialising the same body (member order, white space) is the same intent;</li>
 *   <li>refusals as RFC 9457 problem documents ({@code application/problem+json}) with RetrySafe's
 *       types: {@code /problems/missing-key}, {@code invalid-key}, {@code key-reused},
 *       {@code request-in-progress}, {@code request-too-large}, {@code malformed-json}, {@code unauthenticated}.</li>
 * </ul>
 * An implementation is cheap to call: the suite asks for it in every test.
 */
public interface ConformanceTarget {

    /** Where the service listens, e.g. {@code http://127.0.0.1:8080}; the suite appends {@code /payments}. */
    URI baseUri();

    /** A user the service accepts. */
    Credentials firstUser();

    /** Another user the service accepts: a key of {@link #firstUser()} is not a key of this one. */
    Credentials secondUser();

    /**
     * A new account with this balance in cents, in the service's own database, that no other test
     * touches. Its id is 1 to 64 letters, digits or {@code -}.
     */
    String newAccount(long balance) throws Exception;

    /** Sets the account's balance in cents, as money arriving from elsewhere would. */
    void setBalance(String account, long balance) throws Exception;

    /**
     * The effects the service has had on the account, counted in its own database: its payments, or
     * every execution of the operation (not every answer). The suite asserts that an intent has one,
     * and that a replay or a refused request adds none.
     */
    long effects(String account) throws Exception;

    /**
     * Arranges that the next request {@linkplain Hold#mark marked} with this hold is held by the
     * service after its key was claimed (inside the operation, before it has an effect) until the
     * hold is released. How is the target's business (a test filter, a header the upstream waits on).
     *
     * @param name unique per test, e.g. the request's key
     */
    Hold hold(String name) throws Exception;

    /** The request body bound in bytes: a body over it is refused {@code 413} before anything runs. */
    long maxRequestBytes();
}
