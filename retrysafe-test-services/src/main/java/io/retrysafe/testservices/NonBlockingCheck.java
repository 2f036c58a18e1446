package io.retrysafe.testservices;

import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;

/**
 * BlockHound, installed once per test JVM with the allowances every non-blocking test shares: from
 * then on a blocking call (a sleep, a park, a wait for a lock, blocking I/O) on a Reactor or Netty
 * thread (Reactor Netty's server and client loops, the R2DBC driver's, Lettuce's) fails with
 * {@code BlockingOperationError} instead of passing unnoticed. Netty's and Reactor's own
 * integrations, found on the class path, say which threads must not block. The JVM needs
 * {@code -XX:+AllowRedefinitionToAddDeleteMethods} (JDK 13 and later), set in each module's build.
 */
public final class NonBlockingCheck {
    static {
        BlockHound.install(builder -> builder
                // Stopping a lease's heartbeat cancels its task on the engine's timer, which takes the
                // timer queue's lock for a few instructions; Reactor's own integration allows the same
                // cancel of its schedulers' tasks.
                .allowBlockingCallsInside("io.retrysafe.LeaseRenewal", "close")
                // Handlers name payments with random UUIDs: SecureRandom now and then refills its
                // buffer from /dev/urandom, a read that never waits.
                .allowBlockingCallsInside("java.util.UUID", "randomUUID")
                // A driver may drop the error (when it arrives as a connection closes, say) and leave
                // the caller waiting; the call is printed where it happens so that a hang names it.
                .blockingMethodCallback(method -> {
                    BlockingOperationError error = new BlockingOperationError(method);
                    error.printStackTrace();
                    throw error;
                }));
    }

    private NonBlockingCheck() {
    }

    /** Makes sure BlockHound is installed; cheap after the first call. */
    public static void install() {
        // Loading this class did it.
    }
}
