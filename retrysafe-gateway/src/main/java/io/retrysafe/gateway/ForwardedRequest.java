package io.retrysafe.gateway;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.IOException;
import java.util.concurrent.TimeUnit;

/**
 * The request as the gateway forwards it: its method and path as matched (a route's own spelling), so that the
 * route's filter fingerprints, and the upstream gets, what the gateway matched; and its body, cut off when it
 * arrives slower than the minimum rate.
 */
final class ForwardedRequest extends HttpServletRequestWrapper {
    /**
     * How long a body may take before the minimum rate applies, counted from its first read: a small body is then
     * never cut off for the time the gateway took before reading it.
     */
    static final long RATE_GRACE_MILLIS = 10_000;

    private final String method;
    private final String path;
    private final long minRate;
    private ServletInputStream body;

    /** @param minRate bytes a second the body must arrive at, past the grace period; 0 for no minimum */
    ForwardedRequest(HttpServletRequest request, String method, String path, long minRate) {
        super(request);
        this.method = method;
        this.path = path;
        this.minRate = minRate;
    }

    @Override
    public ServletInputStream getInputStream() throws IOException {
        if (minRate <= 0) {
            return super.getInputStream();
        }
        if (body == null) {
            body = new RateChecked(super.getInputStream(), minRate);
        }
        return body;
    }

    @Override
    public String getMethod() {
        return method;
    }

    @Override
    public String getRequestURI() {
        return path;
    }

    @Override
    public StringBuffer getRequestURL() {
        return new StringBuffer(getScheme()).append("://").append(getServerName()).append(':').append(getServerPort())
                .append(path);
    }

    @Override
    public String getServletPath() {
        return "";
    }

    @Override
    public String getPathInfo() {
        return path;
    }

    /**
     * The body, refusing to go on once it has arrived slower than {@code minRate} past the grace period: a client
     * that trickles a body in holds a request thread no longer (a read that blocks is bounded by the idle timeout).
     */
    private static final class RateChecked extends ServletInputStream {
        private final ServletInputStream in;
        private final long minRate;
        private long started;
        private long read;

        RateChecked(ServletInputStream in, long minRate) {
            this.in = in;
            this.minRate = minRate;
        }

        @Override
        public int read() throws IOException {
            check();
            int b = in.read();
            read += b < 0 ? 0 : 1;
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            check();
            int n = in.read(b, off, len);
            read += Math.max(n, 0);
            return n;
        }

        private void check() throws IOException {
            long now = System.nanoTime();
            if (started == 0) {
                started = now;
                return;
            }
            long millis = TimeUnit.NANOSECONDS.toMillis(now - started) - RATE_GRACE_MILLIS;
            if (millis > 0 && read < millis * minRate / 1000) {
                throw new SlowBodyException("the body arrived slower than " + minRate + " bytes a second ("
                        + read + " bytes in " + TimeUnit.NANOSECONDS.toSeconds(now - started) + " s)");
            }
        }

        @Override
        public boolean isFinished() {
            return in.isFinished();
        }

        @Override
        public boolean isReady() {
            return in.isReady();
        }

        @Override
        public void setReadListener(ReadListener listener) {
            in.setReadListener(listener);
        }
    }

    /** A body cut off for arriving slower than the minimum rate. */
    static final class SlowBodyException extends IOException {
        private static final long serialVersionUID = 1L;

        SlowBodyException(String message) {
            super(message);
        }
    }
}
