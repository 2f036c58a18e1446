package io.retrysafe.gateway;

import java.time.Duration;
import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.io.CyclicTimeouts;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * The bound on each exchange's wait for its answer's headers ({@code response-timeout}), kept by one timer for all of
 * them: the timer is set for the earliest bound only, so that a request does not wake the scheduler's thread as a
 * timer of its own would, each time it is set or cancelled.
 */
final class AnswerTimeouts extends CyclicTimeouts<AnswerTimeouts.Pending> {
    private final Set<Pending> pending = ConcurrentHashMap.newKeySet();

    AnswerTimeouts(Scheduler scheduler) {
        super(scheduler);
    }

    /** Starts the bound: past it, the exchange is aborted, and answered as one with no answer. */
    Pending start(Request upstream, Duration bound) {
        Pending p = new Pending(upstream, bound);
        pending.add(p);
        schedule(p);
        return p;
    }

    @Override
    protected Iterator<Pending> iterator() {
        return pending.iterator();
    }

    @Override
    protected boolean onExpired(Pending p) {
        p.upstream.abort(new TimeoutException("no answer within " + p.bound));
        return true;
    }

    /** One exchange's bound; {@link #cancel()} once its answer's headers are in, or it has ended. */
    final class Pending implements CyclicTimeouts.Expirable {
        private final Request upstream;
        private final Duration bound;
        private final long expires;

        private Pending(Request upstream, Duration bound) {
            this.upstream = upstream;
            this.bound = bound;
            this.expires = CyclicTimeouts.Expirable.calcExpireNanoTime(bound.toMillis());
        }

        @Override
        public long getExpireNanoTime() {
            return expires;
        }

        void cancel() {
            pending.remove(this);
        }
    }
}
