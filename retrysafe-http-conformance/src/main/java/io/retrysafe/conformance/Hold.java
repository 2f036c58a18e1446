package io.retrysafe.conformance;

import java.net.http.HttpRequest;

/**
 * A request held inside the service, so that a duplicate provably meets a request in flight
 * ({@link ConformanceTarget#hold}). Closing it releases the request.
 */
public interface Hold extends AutoCloseable {

    /** Marks the request the service is to hold, e.g. with a header; returns the same builder. */
    HttpRequest.Builder mark(HttpRequest.Builder request);

    /** Returns once the marked request is held (its key claimed, no effect yet); fails after a bound. */
    void awaitArrived() throws Exception;

    /** Lets the held request go on; idempotent. */
    void release() throws Exception;

    @Override
    default void close() throws Exception {
        release();
    }
}
