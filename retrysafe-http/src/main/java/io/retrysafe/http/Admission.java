package io.retrysafe.http;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.internal.Require;

/**
 * What a request is to work that runs behind a handler rather than a filter (a phased operation): admitted
 * with its key and fingerprint, or refused with the answer the filter would give. {@link Admissions} decides it
 * for every front door.
 */
public sealed interface Admission {

    /** The key, scoped to the caller and the route, and the request's fingerprint. */
    record Admitted(IdempotencyKey key, Fingerprint fingerprint) implements Admission {
        public Admitted {
            Require.notNull(key, "key");
            Require.notNull(fingerprint, "fingerprint");
        }
    }

    /**
     * A missing or malformed key ({@code 400}), no caller or one whose identity cannot scope a key ({@code 401}), a
     * body that is not JSON ({@code 400}): an RFC 9457 problem.
     */
    record Refused(HttpAnswer answer) implements Admission {
        public Refused {
            Require.notNull(answer, "answer");
        }
    }
}
