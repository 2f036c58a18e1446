package io.retrysafe;

import io.retrysafe.internal.Engines;
import io.retrysafe.internal.GuardedListener;
import io.retrysafe.internal.InFlightKeys;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;

/**
 * What every engine is built with, whichever SPI its store implements: {@link RetrySafe.Builder} and
 * {@link AsyncRetrySafe.Builder} set these the same way. Each value may be set once. RetrySafe's modules set
 * them on either builder through {@link Engines#configure}.
 *
 * @param <B> the engine's own builder, which each setter returns
 */
abstract class EngineBuilder<B extends EngineBuilder<B>> {
    /** The most writes of an outcome {@link #completionAttempts} allows. */
    private static final int MAX_COMPLETION_ATTEMPTS = 10;

    static {
        // Every engine is made by a builder, so this runs before any engine or builder reaches another module.
        Engines.access(new Engines.Access() {
            @Override
            public InFlightKeys inFlight(Object engine) {
                return engine instanceof RetrySafe blocking ? blocking.inFlight() : ((AsyncRetrySafe) engine).inFlight();
            }

            @Override
            public void configure(Object builder, String name, OperationPolicy policy, RetrySafeListener listener,
                    boolean failOpen, int completionAttempts, Duration completionBackoff) {
                EngineBuilder<?> b = (EngineBuilder<?>) builder;
                b.name(name);
                b.policy(policy);
                if (listener != null) {
                    b.listener(listener);
                }
                b.failOpen(failOpen);
                b.completionAttempts(completionAttempts);
                b.completionBackoff(completionBackoff);
            }
        });
    }

    private String name;
    private OperationPolicy policy;
    private RetrySafeListener listener;
    private Boolean failOpen;
    private Integer completionAttempts;
    private Duration completionBackoff;

    EngineBuilder() {
    }

    @SuppressWarnings("unchecked")
    private B self() {
        return (B) this;
    }

    /** Prefixes every log line, so that several engines in one process can be told apart. */
    public B name(String name) {
        Require.unset(this.name, "name");
        this.name = Require.notBlank(name, "name");
        return self();
    }

    /** The default policy of the engine's calls; the engine's {@code with} overrides it per operation. */
    public B policy(OperationPolicy policy) {
        Require.unset(this.policy, "policy");
        this.policy = Require.notNull(policy, "policy");
        return self();
    }

    public B listener(RetrySafeListener listener) {
        Require.unset(this.listener, "listener");
        this.listener = Require.notNull(listener, "listener");
        return self();
    }

    /**
     * When the store cannot be reached before the operation runs: {@code false} (the default)
     * refuses with {@link Outcome.StoreUnavailable}; {@code true} runs the operation unprotected.
     * Only an unreachable store ({@link StoreUnavailableException#isUnreachable()}) fails open: a
     * full store, a record that cannot be read, or any other failure is still refused. Fail open
     * only where a duplicate effect is cheaper than an outage.
     */
    public B failOpen(boolean failOpen) {
        Require.unset(this.failOpen, "failOpen");
        this.failOpen = failOpen;
        return self();
    }

    /**
     * Standalone mode: how many times, the first included, the outcome of an operation that ran is
     * written before the caller is told it is unknown ({@link OutcomeUnknownException}); 1 to 10.
     */
    public B completionAttempts(int completionAttempts) {
        Require.unset(this.completionAttempts, "completionAttempts");
        this.completionAttempts = Require.between(completionAttempts, 1, MAX_COMPLETION_ATTEMPTS,
                "completionAttempts");
        return self();
    }

    /** The first pause between two writes of an outcome, doubled after each; at most 10 s. */
    public B completionBackoff(Duration completionBackoff) {
        Require.unset(this.completionBackoff, "completionBackoff");
        Require.atLeastOneMilli(completionBackoff, "completionBackoff");
        if (completionBackoff.compareTo(Duration.ofSeconds(10)) > 0) {
            throw new IllegalArgumentException("completionBackoff must be at most 10s, but was " + completionBackoff);
        }
        this.completionBackoff = completionBackoff;
        return self();
    }

    /** The settings, defaults filled in, for a store of this name. */
    EngineCore core(String storeName) {
        String n = name == null ? RetrySafe.DEFAULT_NAME : name;
        return new EngineCore(n, storeName, policy == null ? OperationPolicy.ofDefaults() : policy,
                new GuardedListener(n, listener == null ? RetrySafeListener.NONE : listener),
                failOpen == null ? RetrySafe.DEFAULT_FAIL_OPEN : failOpen,
                completionAttempts == null ? RetrySafe.DEFAULT_COMPLETION_ATTEMPTS : completionAttempts,
                doubling(completionBackoff == null ? RetrySafe.DEFAULT_COMPLETION_BACKOFF : completionBackoff));
    }

    /** Doubling from {@code first} with no cap short of the last pause: at most nine pauses, the last 256 × {@code first}. */
    private static Backoff doubling(Duration first) {
        return Backoff.exponential(first, first.multipliedBy(1L << (MAX_COMPLETION_ATTEMPTS - 2)));
    }
}
