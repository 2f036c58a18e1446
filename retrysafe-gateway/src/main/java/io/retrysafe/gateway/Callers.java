package io.retrysafe.gateway;

import jakarta.servlet.http.HttpServletRequest;

/**
 * Who sent a request, as one configured source names it: a users file, a JWT's subject, a trusted proxy's header.
 * The gateway asks once per request, before anything is forwarded, and tells the upstream the answer in a header of
 * its own; a request that names no caller is refused, unless its path is public.
 */
interface Callers {
    /** The realm of the challenges. */
    String REALM = "retrysafe-gateway";

    /** The caller's name, or null when the request names none that checks out. */
    String caller(HttpServletRequest request);

    /** The scope a caller's keys are stored under, so that one caller's key never replays another's answer. */
    String scope(String caller);

    /** The {@code WWW-Authenticate} challenge of a {@code 401}; null for a source with no scheme. */
    String challenge();

    /** The value of a header set by a proxy in front that authenticated the client; only as safe as that proxy. */
    static Callers trustedHeader(String name) {
        return new Callers() {
            @Override
            public String caller(HttpServletRequest request) {
                String v = request.getHeader(name);
                return v == null || v.isBlank() ? null : v;
            }

            @Override
            public String scope(String caller) {
                return "header:" + name + ":" + caller;
            }

            @Override
            public String challenge() {
                return null;
            }
        };
    }
}
