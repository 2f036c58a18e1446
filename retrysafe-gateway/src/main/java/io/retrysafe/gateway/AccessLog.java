package io.retrysafe.gateway;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.RetrySafeFilter;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Instant;

/**
 * One line per request on standard output: time, client, method, path (no query: it may hold secrets), status,
 * milliseconds, the key's digest (never the key), whether the answer was a replay. A line looks like
 * {@code 2026-12-01T20:00:00Z 10.0.0.7 POST /payments 201 12ms key=3f9a1c0e42b7 replayed=false}.
 */
final class AccessLog implements Filter {
    private final PrintStream out = System.out;

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        long start = System.nanoTime();
        try {
            chain.doFilter(req, res);
        } finally {
            if (req instanceof HttpServletRequest request && res instanceof HttpServletResponse response) {
                out.println(Instant.now() + " " + request.getRemoteAddr() + " " + request.getMethod() + " "
                        + request.getRequestURI() + " " + response.getStatus() + " "
                        + (System.nanoTime() - start) / 1_000_000 + "ms key=" + digest(request.getHeader(HttpIdempotency.HEADER))
                        + " replayed=" + "true".equals(response.getHeader(RetrySafeFilter.REPLAYED_HEADER)));
            }
        }
    }

    /** The key's digest as the engine logs it, under a scope of its own (the access log knows no caller). */
    static String digest(String key) {
        if (key == null) {
            return "-";
        }
        try {
            return IdempotencyKey.of("access-log", key).digest();
        } catch (RuntimeException e) {
            return "invalid";
        }
    }
}
