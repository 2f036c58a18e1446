package io.retrysafe.spring;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Outcome;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.util.ClassUtils;

/**
 * The one place the starter observes its work: each protected HTTP request, each {@link Idempotent}
 * call and each consumed Kafka record is a Micrometer {@code Observation} named {@value #NAME} (a span
 * once a tracing bridge is there), and while it runs the logging MDC holds the key's digest. Both
 * carry the digest the logs show ({@link IdempotencyKey#digest()}), never the raw key. Without
 * Micrometer Observation or an {@code ObservationRegistry} bean it observes nothing, and without
 * SLF4J it leaves the MDC alone.
 */
class RetrySafeObservations {
    static final String NAME = "retrysafe.request";
    /** Low cardinality: {@code http}, {@code method} or {@code kafka}. */
    static final String KIND = "retrysafe.kind";
    /** Low cardinality: what became of the call ({@code executed}, {@code replayed}, …). */
    static final String OUTCOME = "retrysafe.outcome";
    /** High cardinality, and the MDC key: the key's digest. */
    static final String KEY_DIGEST = "retrysafe.key.digest";

    static final String EXECUTED = "executed";
    static final String REPLAYED = "replayed";
    static final String IN_PROGRESS = "in_progress";
    static final String MISMATCH = "mismatch";
    static final String STORE_UNAVAILABLE = "store_unavailable";
    static final String UNPROTECTED = "unprotected";
    static final String UNAUTHENTICATED = "unauthenticated";
    static final String INVALID_KEY = "invalid_key";
    static final String ERROR = "error";

    private static final boolean OBSERVATION = ClassUtils.isPresent("io.micrometer.observation.ObservationRegistry",
            RetrySafeObservations.class.getClassLoader());
    private static final boolean SLF4J = ClassUtils.isPresent("org.slf4j.MDC", RetrySafeObservations.class.getClassLoader());

    /** Observes nothing; keeps the MDC. */
    static final RetrySafeObservations NONE = new RetrySafeObservations();

    /** With the application's {@code ObservationRegistry}, or {@link #NONE} when it has none. */
    static RetrySafeObservations of(BeanFactory beans) {
        return OBSERVATION ? Micrometer.of(beans) : NONE;
    }

    /** The outcome's name, as the observation and the logs give it. */
    static String outcome(Outcome<?> outcome) {
        if (outcome instanceof Outcome.Executed<?>) {
            return EXECUTED;
        } else if (outcome instanceof Outcome.Replayed<?>) {
            return REPLAYED;
        } else if (outcome instanceof Outcome.InProgress<?>) {
            return IN_PROGRESS;
        } else if (outcome instanceof Outcome.FingerprintMismatch<?>) {
            return MISMATCH;
        } else if (outcome instanceof Outcome.StoreUnavailable<?>) {
            return STORE_UNAVAILABLE;
        }
        return UNPROTECTED;
    }

    /**
     * Starts observing one call of {@code kind}; {@code name} is the span's name (low cardinality: a
     * method, a topic, never a key). Close the returned handle when the call ends.
     *
     * @param current whether the observation is the thread's current one while the call runs (the parent
     *     of what the call observes). Not around a Spring Kafka listener: its adapter stops whatever
     *     observation is current when the listener returns.
     */
    Observed start(String kind, String name, boolean current) {
        return new Observed();
    }

    /**
     * One observed call. Not thread-safe: used by the thread that runs the call, or, for an asynchronous
     * call, by the request thread until {@link #leaveThread} and then by the thread that completes it.
     */
    static class Observed implements AutoCloseable {
        private boolean mdcSet;
        private String mdcBefore;

        /** The call's key is known: its digest goes to the observation and the MDC. */
        void key(IdempotencyKey key) {
            if (SLF4J && !mdcSet) {
                mdcBefore = Mdc.put(key.digest());
                mdcSet = true;
            }
        }

        void outcome(Outcome<?> outcome) {
            outcome(RetrySafeObservations.outcome(outcome));
        }

        void outcome(String outcome) {
        }

        /** The call ended with {@code error}: the outcome is {@value RetrySafeObservations#ERROR} unless already set. */
        void error(Throwable error) {
        }

        /**
         * The call goes on on another thread (an asynchronous handler): this thread's MDC and current
         * observation are restored now; {@link #close} ends the observation where the call ends.
         */
        void leaveThread() {
            if (mdcSet) {
                Mdc.restore(mdcBefore);
                mdcSet = false;
            }
        }

        @Override
        public void close() {
            leaveThread();
        }
    }

    /** Loaded only with SLF4J present. A call inside another (a method inside a request) restores the outer digest. */
    private static final class Mdc {
        static String put(String digest) {
            String before = org.slf4j.MDC.get(KEY_DIGEST);
            org.slf4j.MDC.put(KEY_DIGEST, digest);
            return before;
        }

        static void restore(String before) {
            if (before == null) {
                org.slf4j.MDC.remove(KEY_DIGEST);
            } else {
                org.slf4j.MDC.put(KEY_DIGEST, before);
            }
        }
    }

    /** Loaded only with Micrometer Observation present. */
    private static final class Micrometer extends RetrySafeObservations {
        private final ObservationRegistry registry;

        private Micrometer(ObservationRegistry registry) {
            this.registry = registry;
        }

        static RetrySafeObservations of(BeanFactory beans) {
            ObservationRegistry registry = beans.getBeanProvider(ObservationRegistry.class).getIfUnique();
            return registry == null || registry.isNoop() ? NONE : new Micrometer(registry);
        }

        @Override
        Observed start(String kind, String name, boolean current) {
            Observation observation = Observation.createNotStarted(NAME, registry).contextualName(name)
                    .lowCardinalityKeyValue(KIND, kind).start();
            return new ObservedByMicrometer(observation, current ? observation.openScope() : null);
        }
    }

    private static final class ObservedByMicrometer extends Observed {
        private final Observation observation;
        /** Null when not made current, or once the call left the thread that made it current. */
        private Observation.Scope scope;
        private String outcome;

        ObservedByMicrometer(Observation observation, Observation.Scope scope) {
            this.observation = observation;
            this.scope = scope;
        }

        @Override
        void key(IdempotencyKey key) {
            super.key(key);
            observation.highCardinalityKeyValue(KEY_DIGEST, key.digest());
        }

        @Override
        void outcome(String outcome) {
            this.outcome = outcome;
        }

        /** A refusal the outcome already names (409, 422, …) is the call's answer, not an error of the span. */
        @Override
        void error(Throwable error) {
            if (outcome == null) {
                outcome = ERROR;
                observation.error(error);
            }
        }

        @Override
        void leaveThread() {
            if (scope != null) {
                scope.close();
                scope = null;
            }
            super.leaveThread();
        }

        @Override
        public void close() {
            try {
                observation.lowCardinalityKeyValue(OUTCOME, outcome == null ? ERROR : outcome);
                if (scope != null) {
                    scope.close();
                    scope = null;
                }
                observation.stop();
            } finally {
                super.close();
            }
        }
    }
}
