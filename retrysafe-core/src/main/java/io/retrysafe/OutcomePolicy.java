package io.retrysafe;

/**
 * Decides whether a result is kept for replay or releases the key so that a retry runs again.
 * An exception thrown by the operation always releases the key.
 */
@FunctionalInterface
public interface OutcomePolicy {

    enum Decision {
        /** Keep the response; every retry replays it. */
        STORE,
        /** Mark the record {@code FAILED}, retryable: the next retry runs the operation again. */
        RELEASE
    }

    Decision decide(StoredResponse response);

    /**
     * 2xx to 4xx are stored, except 408, 409, 425 and 429, which say "try again"; 1xx and 5xx release.
     * A 4xx is stored because the same request will be refused the same way.
     */
    OutcomePolicy DEFAULT = response -> {
        int s = response.status();
        boolean transientRefusal = s == 408 || s == 409 || s == 425 || s == 429;
        return s >= 200 && s < 500 && !transientRefusal ? Decision.STORE : Decision.RELEASE;
    };

    /** Every returned result is stored; only exceptions release. For results that carry no HTTP status. */
    OutcomePolicy STORE_ALL = response -> Decision.STORE;
}
