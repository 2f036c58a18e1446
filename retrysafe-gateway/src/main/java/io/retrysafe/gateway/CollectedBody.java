package io.retrysafe.gateway;

import java.io.IOException;
import java.nio.ByteBuffer;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpMethod;

/**
 * An upstream's answer of declared length up to {@link #MAX_BYTES}, collected as it arrives and written whole once it
 * has all come, so that an answer cut short is answered as such rather than passed on in part. Larger answers, and
 * those of unknown length, stream instead.
 */
final class CollectedBody {
    /** The largest answer collected whole. */
    static final int MAX_BYTES = 64 * 1024;

    private final byte[] bytes;
    private int length;

    private CollectedBody(int declared) {
        this.bytes = new byte[declared];
    }

    /** The body to collect the answer into, or null when it streams (unknown length, or over {@link #MAX_BYTES}). */
    static CollectedBody of(Request upstream, Response answer) {
        int status = answer.getStatus();
        // No body follows whatever length is declared: the answer to HEAD, 1xx, 204, 304.
        boolean bodiless = HttpMethod.HEAD.is(upstream.getMethod()) || status < 200 || status == 204 || status == 304;
        long declared = bodiless ? 0 : answer.getHeaders().getLongField(HttpHeader.CONTENT_LENGTH);
        return declared >= 0 && declared <= MAX_BYTES ? new CollectedBody((int) declared) : null;
    }

    /** Adds a chunk; more than the length declared fails the exchange, which is then answered as cut short. */
    boolean add(ByteBuffer chunk, Request upstream) {
        int n = chunk.remaining();
        if (n > bytes.length - length) {
            upstream.abort(new IOException("the answer is longer than its Content-Length of " + bytes.length));
            return false;
        }
        chunk.get(bytes, length, n);
        length += n;
        return true;
    }

    /** Whether all the length declared has come. */
    boolean whole() {
        return length == bytes.length;
    }

    /** Why an answer that ended is not whole. */
    IOException cutShort() {
        return new IOException("the answer ended after " + length + " of its " + bytes.length + " bytes");
    }

    ByteBuffer bytes() {
        return ByteBuffer.wrap(bytes, 0, length);
    }

    int length() {
        return length;
    }
}
