package io.retrysafe.gateway;

/**
 * Who sent a request, as one configured source names it: a users file, a JWT's subject, a trusted proxy's header.
 * The gateway asks once per request, before anything is forwarded, and tells the upstream the answer in a header of
 * its own; a request that names no caller is refused, unless its path is public.
 */
interface Callers {
    /** The realm of the challenges. */
    String REALM = "retrysafe-gateway";

    /** A request's headers, by name (any case): what a source reads the caller from, whichever server holds them. */
    @FunctionalInterface
    interface Headers {
        /** The header's first value, or null. */
        String get(String name);
    }

    /** The caller's name, or null when the request names none that checks out. */
    String caller(Headers headers);

    /** What {@link #caller} answers, given without waiting: the caller's name, or null for none that checks out. */
    record AtOnce(String caller) {
        static final AtOnce NOBODY = new AtOnce(null);
    }

    /**
     * {@link #caller}'s answer when it takes no waiting (no password to check, no key to fetch), so that a thread that
     * serves other connections too may ask; null when it would wait.
     */
    default AtOnce callerAtOnce(Headers headers) {
        return null;
    }

    /** The scope a caller's keys are stored under, so that one caller's key never replays another's answer. */
    String scope(String caller);

    /** The {@code WWW-Authenticate} challenge of a {@code 401}; null for a source with no scheme. */
    String challenge();

    /** The value of a header set by a proxy in front that authenticated the client; only as safe as that proxy. */
    static Callers trustedHeader(String name) {
        return new Callers() {
            @Override
            public String caller(Headers headers) {
                String v = headers.get(name);
                return v == null || v.isBlank() ? null : v;
            }

            @Override
            public AtOnce callerAtOnce(Headers headers) {
                return new AtOnce(caller(headers));
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
