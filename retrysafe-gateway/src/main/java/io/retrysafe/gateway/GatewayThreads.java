package io.retrysafe.gateway;

import java.lang.System.Logger.Level;
import org.eclipse.jetty.io.Connection;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The gateway's request threads, which run one kind of job where it is given instead of waking one of them: a client
 * connection resuming once its answer is written. On the non-blocking path that answer is written by another thread
 * than the one that read the request (the HTTP client's, the store client's), and the server then hands the
 * connection to the pool to read on. What the connection does next does not block: it reads what has come (usually
 * nothing yet, and it asks its selector to say when something does), and a request it finds goes to the gateway's
 * first handler, which never blocks. Handing it over cost a wake-up of a pool thread per request, and its futex calls,
 * on every path the gateway forwards without a request thread.
 */
final class GatewayThreads extends QueuedThreadPool {
    private static final System.Logger LOG = System.getLogger(GatewayThreads.class.getName());
    /** Set on a thread while it runs a resumed connection: a connection resumed inside that one goes to the pool. */
    private static final ThreadLocal<Object> RESUMING = new ThreadLocal<>();

    GatewayThreads() {
        super(256, 8);
        setName("gateway");
    }

    @Override
    public void execute(Runnable job) {
        if (!(job instanceof Connection) || RESUMING.get() != null) {
            super.execute(job);
            return;
        }
        RESUMING.set(Boolean.TRUE);
        try {
            job.run();
        } catch (RuntimeException | Error e) {
            // As the pool would: the connection's own failure, logged, not the caller's who wrote the answer.
            LOG.log(Level.WARNING, () -> "resuming " + job + " failed", e);
        } finally {
            RESUMING.remove();
        }
    }
}
