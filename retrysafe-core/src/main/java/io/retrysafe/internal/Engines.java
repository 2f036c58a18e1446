package io.retrysafe.internal;

import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;

/**
 * What RetrySafe's modules reach in core's engines and their builders that the API does not show users: an
 * engine's keys in flight, and the settings both engines' builders share. {@code io.retrysafe} sets the access
 * once, as its builders' common class loads, so it is set wherever an engine or a builder exists.
 */
public final class Engines {
    private static volatile Access access;

    private Engines() {
    }

    /** Implemented once, in {@code io.retrysafe}. */
    public interface Access {
        InFlightKeys inFlight(Object engine);

        void configure(Object builder, String name, OperationPolicy policy, RetrySafeListener listener,
                boolean failOpen, int completionAttempts, Duration completionBackoff);
    }

    /** Called once, by {@code io.retrysafe}; a second call fails, so that nothing can replace the access. */
    public static void access(Access engines) {
        synchronized (Engines.class) {
            if (access != null) {
                throw new IllegalStateException("the engines' access is set once, and it was set already");
            }
            access = Require.notNull(engines, "engines");
        }
    }

    /**
     * The keys in flight on this instance, shared by every copy of the engine (and by the asynchronous engine a
     * blocking one made): a front door that claims before its handler runs and records after it admits its
     * requests here, as the engine's own calls do.
     */
    public static InFlightKeys inFlight(RetrySafe engine) {
        return access.inFlight(Require.notNull(engine, "engine"));
    }

    /** {@link #inFlight(RetrySafe)} for the non-blocking engine. */
    public static InFlightKeys inFlight(AsyncRetrySafe engine) {
        return access.inFlight(Require.notNull(engine, "engine"));
    }

    /**
     * Sets what every engine is built with on {@code builder}, a {@link RetrySafe.Builder} or an
     * {@link AsyncRetrySafe.Builder}, so that both are configured by one piece of code.
     *
     * @param listener the engine's listener, or null for none
     */
    public static <B> B configure(B builder, String name, OperationPolicy policy, RetrySafeListener listener,
            boolean failOpen, int completionAttempts, Duration completionBackoff) {
        access.configure(Require.notNull(builder, "builder"), name, policy, listener, failOpen, completionAttempts,
                completionBackoff);
        return builder;
    }
}
