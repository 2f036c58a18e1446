package io.retrysafe.examples.paymentstesting;

import io.retrysafe.conformance.Hold;
import java.net.http.HttpRequest;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A request that carries {@code X-Test-Hold: <name>}, held by a test filter of the service right after
 * the RetrySafe filter (inside the request's transaction, after its key was claimed) until the test
 * releases it. A duplicate sent meanwhile meets a request that is provably in flight. The filter takes
 * the hold ({@link #take}), says it {@link #arrive}d, and goes on once {@link #released()} completes.
 */
public final class TestHold implements Hold {
    public static final String HEADER = "X-Test-Hold";
    private static final Map<String, TestHold> HOLDS = new ConcurrentHashMap<>();

    private final String name;
    private final CompletableFuture<Void> arrived = new CompletableFuture<>();
    private final CompletableFuture<Void> released = new CompletableFuture<>();

    private TestHold(String name) {
        this.name = name;
    }

    /** Holds the next request marked with {@code name}. */
    public static TestHold hold(String name) {
        TestHold hold = new TestHold(name);
        HOLDS.put(name, hold);
        return hold;
    }

    /** For the filter: the hold of a request's {@link #HEADER} value (null: none), which no other request gets. */
    public static TestHold take(String name) {
        return name == null ? null : HOLDS.remove(name);
    }

    /**
     * For a filter of the service's stack: holds the request marked with {@code name} (its {@link #HEADER} value;
     * null: none) until the test releases it, at most 60 s.
     *
     * @throws IllegalStateException the test did not release it in time, or the thread was interrupted
     */
    public static void holdIfMarked(String name) {
        TestHold hold = take(name);
        if (hold == null) {
            return;
        }
        hold.arrive();
        try {
            hold.released().get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("test hold was not released within 60 s", e);
        }
    }

    /** For the filter: the request is held now. */
    public void arrive() {
        arrived.complete(null);
    }

    /** Completes when the test lets the request go on. */
    public CompletableFuture<Void> released() {
        return released;
    }

    @Override
    public HttpRequest.Builder mark(HttpRequest.Builder request) {
        return request.header(HEADER, name);
    }

    @Override
    public void awaitArrived() throws Exception {
        arrived.get(30, TimeUnit.SECONDS);
    }

    @Override
    public void release() {
        released.complete(null);
    }
}
