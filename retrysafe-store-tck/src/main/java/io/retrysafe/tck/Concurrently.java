package io.retrysafe.tck;

import static org.assertj.core.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs tasks on one thread each, released together by a latch, and waits for all of them with a
 * bound. A task that does not finish in time fails the test with a message saying so, rather than
 * hanging the build.
 */
final class Concurrently {

    private Concurrently() {
    }

    static <T> List<T> run(String what, Duration timeout, List<? extends Callable<T>> tasks) {
        int n = tasks.size();
        AtomicInteger threadNumber = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(n, r -> {
            Thread t = new Thread(r, "tck-" + threadNumber.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        try {
            CountDownLatch ready = new CountDownLatch(n);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<T>> futures = new ArrayList<>(n);
            for (Callable<T> task : tasks) {
                futures.add(pool.submit(() -> {
                    ready.countDown();
                    if (!start.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                        throw new IllegalStateException("never released");
                    }
                    return task.call();
                }));
            }
            long deadline = System.nanoTime() + timeout.toNanos();
            if (!ready.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                fail(what + ": only " + (n - ready.getCount()) + " of " + n + " threads started within " + timeout);
            }
            start.countDown();
            List<T> results = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                try {
                    results.add(futures.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
                } catch (TimeoutException e) {
                    long unfinished = futures.stream().filter(f -> !f.isDone()).count();
                    fail(what + ": " + unfinished + " of " + n + " tasks did not finish within " + timeout
                            + "; the store blocks (deadlock, or a lock timeout longer than the test allows)");
                } catch (ExecutionException e) {
                    throw new AssertionError(what + ": task " + i + " failed: " + e.getCause(), e.getCause());
                }
            }
            return results;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(what + ": interrupted", e);
        } finally {
            pool.shutdownNow();
        }
    }
}
