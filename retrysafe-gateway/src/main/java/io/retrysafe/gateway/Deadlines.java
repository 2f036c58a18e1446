package io.retrysafe.gateway;

import java.time.Duration;
import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.jetty.io.CyclicTimeouts;
import org.eclipse.jetty.util.thread.Scheduler;

/**
 * The deadlines of the requests in flight (the wait for an answer's headers, a body's arrival), kept by one timer for
 * all of them: the timer is set for the earliest deadline only, so that a request does not wake the scheduler's thread
 * as a timer of its own would, each time it is set or cancelled.
 */
final class Deadlines extends CyclicTimeouts<Deadlines.Pending> {
    private final Set<Pending> pending = ConcurrentHashMap.newKeySet();

    Deadlines(Scheduler scheduler) {
        super(scheduler);
    }

    /** Runs {@code expired} once {@code bound} has passed, unless the deadline is {@linkplain Pending#cancel() cancelled}. */
    Pending start(Duration bound, Runnable expired) {
        Pending p = new Pending(bound, expired);
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
        p.expired.run();
        return true;
    }

    /** One deadline. */
    final class Pending implements CyclicTimeouts.Expirable {
        private final Runnable expired;
        private final long expires;

        private Pending(Duration bound, Runnable expired) {
            this.expired = expired;
            this.expires = CyclicTimeouts.Expirable.calcExpireNanoTime(bound.toMillis());
        }

        @Override
        public long getExpireNanoTime() {
            return expires;
        }

        /** The work is done in time: nothing runs. */
        void cancel() {
            pending.remove(this);
        }
    }
}
