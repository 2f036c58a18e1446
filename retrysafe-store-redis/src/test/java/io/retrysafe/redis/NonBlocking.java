package io.retrysafe.redis;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import io.retrysafe.testservices.NonBlockingCheck;

/**
 * Installs BlockHound, once per test JVM, when a non-blocking test class loads it: from then on a
 * blocking call (sleep, park, a wait for a lock, blocking I/O) on one of Lettuce's event-loop threads
 * or a Reactor thread fails with {@code BlockingOperationError} instead of passing unnoticed. Netty's
 * own integration (found by BlockHound on the class path) marks the event-loop threads; Reactor's
 * marks its schedulers' threads.
 */
final class NonBlocking {
    static {
        NonBlockingCheck.install();
    }

    private NonBlocking() {
    }

    /** Makes sure BlockHound is installed; cheap after the first call. */
    static void install() {
        // Loading this class did it.
    }

    /**
     * Runs {@code onEventLoop} where Lettuce completes a command: after a {@code BLPOP} that the server
     * holds for 50 ms, so the callback is chained before the answer arrives and runs on the event loop.
     */
    static <T> CompletableFuture<T> onEventLoop(RedisClient client, String emptyList,
            java.util.function.Supplier<T> onEventLoop) {
        StatefulRedisConnection<String, String> c = client.connect();
        return c.async().blpop(0.05, emptyList).toCompletableFuture()
                .thenApply(nothing -> onEventLoop.get())
                .whenComplete((r, e) -> c.closeAsync());
    }

    static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
