package io.retrysafe.gateway;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.RetrySafeFilter;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * One line per request on standard output: time, client, method, path (no query: it may hold secrets), status,
 * milliseconds, the key's digest (never the key), whether the answer was a replay. A line looks like
 * {@code 2026-12-01T20:00:00Z 10.0.0.7 POST /payments 201 12ms key=3f9a1c0e42b7 replayed=false}.
 *
 * <p>A request hands its line to one writer thread and goes on: it never waits for standard output. Printed on the
 * request thread, every request took the stream's lock and wrote to it before its answer left, so that on a busy
 * machine a writer descheduled while holding the lock held up every request behind it. The writer prints what has
 * queued up in one write, {@value #FLUSH_MILLIS} ms after the first of it: woken for each line, it cost a wake-up
 * and a write per request. A request waits only when {@value #MAX_QUEUED} lines are queued (no line is dropped);
 * {@link #destroy()} prints what is left.
 */
final class AccessLog implements Filter {
    static final int MAX_QUEUED = 10_000;
    /** How long a line may wait for the lines after it, to be printed with them. */
    static final long FLUSH_MILLIS = 20;
    private static final System.Logger LOG = System.getLogger(AccessLog.class.getName());
    /** Queued after the last line by {@link #destroy()}: the writer prints what came before, then stops. */
    private static final String END = new String("end");

    private final PrintStream out;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>(MAX_QUEUED);
    private final Thread writer;

    AccessLog() {
        this(System.out);
    }

    AccessLog(PrintStream out) {
        this.out = out;
        this.writer = new Thread(this::write, "gateway-access-log");
        writer.setDaemon(true);
        writer.start();
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
            throws IOException, ServletException {
        long start = System.nanoTime();
        try {
            chain.doFilter(req, res);
        } finally {
            if (req instanceof HttpServletRequest request && res instanceof HttpServletResponse response) {
                if (request.isAsyncStarted()) {
                    // Answered later, by another thread: the line is written once the answer is complete.
                    request.getAsyncContext().addListener(new AsyncListener() {
                        @Override
                        public void onComplete(AsyncEvent event) {
                            log(request, response, start);
                        }

                        @Override
                        public void onTimeout(AsyncEvent event) {
                        }

                        @Override
                        public void onError(AsyncEvent event) {
                        }

                        @Override
                        public void onStartAsync(AsyncEvent event) {
                        }
                    });
                } else {
                    log(request, response, start);
                }
            }
        }
    }

    private void log(HttpServletRequest request, HttpServletResponse response, long start) {
        log(request.getRemoteAddr(), request.getMethod(), request.getRequestURI(), response.getStatus(), start,
                request.getHeader(HttpIdempotency.HEADER),
                "true".equals(response.getHeader(RetrySafeFilter.REPLAYED_HEADER)));
    }

    /** Queues the line of a request that started at {@code start} ({@link System#nanoTime()}), whichever path it took. */
    void log(String client, String method, String path, int status, long start, String key, boolean replayed) {
        queue(Instant.now() + " " + client + " " + method + " " + path + " " + status + " "
                + (System.nanoTime() - start) / 1_000_000 + "ms key=" + digest(key) + " replayed=" + replayed);
    }

    private void queue(String line) {
        try {
            lines.put(line);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            LOG.log(System.Logger.Level.WARNING, () -> "interrupted; access log line not written: " + line);
        }
    }

    /** The writer thread: waits for a line, then prints it with every line queued meanwhile, in one write. */
    private void write() {
        List<String> batch = new ArrayList<>();
        while (true) {
            try {
                batch.add(lines.take());
                // The lines of the next few milliseconds go in the same write: one write and one wake-up of this
                // thread for many requests, not one each.
                Thread.sleep(FLUSH_MILLIS);
            } catch (InterruptedException e) {
                // Only destroy() stops the writer, with END; an interrupt alone loses no line.
                continue;
            }
            lines.drainTo(batch);
            StringBuilder text = new StringBuilder();
            boolean end = false;
            for (String line : batch) {
                if (line == END) {
                    end = true;
                    break;
                }
                text.append(line).append(System.lineSeparator());
            }
            batch.clear();
            out.print(text);
            out.flush();
            if (end) {
                return;
            }
        }
    }

    /** Prints the lines still queued (waiting up to five seconds for the writer), then stops the writer. */
    @Override
    public void destroy() {
        queue(END);
        try {
            writer.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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
