package io.retrysafe.spring;

import io.retrysafe.AsyncPhaseCompleter;
import io.retrysafe.PhaseCompleter;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.spi.RetrySafeListener;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledFuture;
import java.util.function.LongConsumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.util.ClassUtils;

/**
 * Runs the completer of phased operations every {@code retrysafe.phases.completer.interval} (30 s by default)
 * after the last run ended, and reports its backlog after each. Every instance schedules it; the completer's
 * database lock lets one run at a time. Does nothing when the application declares no phased operation
 * ({@code PhasedOperation} bean or {@code @Idempotent} method that takes {@code Phases}; in a reactive application,
 * {@code AsyncPhasedOperation} bean). The completer of either face runs here, the non-blocking one on the
 * schedule's thread, which waits for its run: no event loop does.
 */
public final class RetrySafeCompleterScheduler implements SmartLifecycle {
    private static final System.Logger LOG = System.getLogger(RetrySafeCompleterScheduler.class.getName());
    private static final String METERS = "io.retrysafe.micrometer.MicrometerRetrySafeListener";

    private final Supplier<Completer> build;
    private volatile Completer completer;
    private volatile boolean built;
    private final Duration interval;
    private final LongConsumer backlog;
    private volatile PhaseCompleter.Run lastRun;
    private volatile long lastBacklog = -1;
    private ThreadPoolTaskScheduler scheduler;
    private ScheduledFuture<?> future;

    /** @param build the completer, or null when there is nothing to complete; called once, at start */
    RetrySafeCompleterScheduler(Supplier<Completer> build, Duration interval, LongConsumer backlog) {
        this.build = build;
        this.interval = interval;
        this.backlog = backlog;
    }

    /** The completer, or empty when the application declares no phased operation. */
    public Optional<Completer> completer() {
        return Optional.ofNullable(built());
    }

    /** The completer of phased operations, of either face, as the schedule runs it. */
    public static final class Completer {
        private final Set<String> operations;
        private final Duration idleFor;
        private final int batchSize;
        private final Supplier<PhaseCompleter.Run> runOnce;
        private final LongSupplier backlog;

        private Completer(Set<String> operations, Duration idleFor, int batchSize, Supplier<PhaseCompleter.Run> runOnce,
                LongSupplier backlog) {
            this.operations = operations;
            this.idleFor = idleFor;
            this.batchSize = batchSize;
            this.runOnce = runOnce;
            this.backlog = backlog;
        }

        /** The blocking face's, for JDBC; null for none. */
        static Completer of(PhaseCompleter<?> c) {
            return c == null ? null : new Completer(c.operations(), c.idleFor(), c.batchSize(), c::runOnce, c::backlog);
        }

        /** The non-blocking face's, for R2DBC, its stages waited for on the schedule's thread; null for none. */
        static Completer of(AsyncPhaseCompleter<?> c) {
            return c == null ? null : new Completer(c.operations(), c.idleFor(), c.batchSize(),
                    () -> join(c.runOnce()), () -> join(c.backlog()));
        }

        /** The names of the operations it may find. */
        public Set<String> operations() {
            return operations;
        }

        public Duration idleFor() {
            return idleFor;
        }

        public int batchSize() {
            return batchSize;
        }

        /** The stage's value, or its failure as it was (a store's failure is unchecked). */
        private static <T> T join(CompletionStage<T> stage) {
            try {
                return stage.toCompletableFuture().join();
            } catch (CompletionException e) {
                if (e.getCause() instanceof RuntimeException cause) {
                    throw cause;
                }
                throw e;
            }
        }
    }

    /**
     * Where the backlog counted after each run goes: the gauge of the application's Micrometer listener, when
     * retrysafe-micrometer is on the class path and the listener is a bean; nowhere otherwise.
     */
    static LongConsumer backlogGauge(ObjectProvider<RetrySafeListener> listeners) {
        return ClassUtils.isPresent(METERS, RetrySafeCompleterScheduler.class.getClassLoader())
                ? Meters.backlog(listeners) : backlog -> { };
    }

    /** Loaded only with retrysafe-micrometer on the class path. */
    private static final class Meters {
        static LongConsumer backlog(ObjectProvider<RetrySafeListener> listeners) {
            return backlog -> listeners.orderedStream().forEach(listener -> {
                if (listener instanceof MicrometerRetrySafeListener meters) {
                    meters.recordCompleterBacklog(backlog);
                }
            });
        }
    }

    /** The operations are known once every bean exists: built at start, or at the first use before it. */
    private Completer built() {
        if (!built) {
            synchronized (this) {
                if (!built) {
                    completer = build.get();
                    built = true;
                }
            }
        }
        return completer;
    }

    /** Runs the completer now, then counts the backlog; what the schedule calls. */
    public PhaseCompleter.Run runNow() {
        Completer completer = built();
        if (completer == null) {
            throw new IllegalStateException("the application declares no PhasedOperation bean: nothing to complete");
        }
        PhaseCompleter.Run run = completer.runOnce.get();
        lastRun = run;
        long left = completer.backlog.getAsLong();
        lastBacklog = left;
        backlog.accept(left);
        return run;
    }

    /** The last run, if there was one since start. */
    public Optional<PhaseCompleter.Run> lastRun() {
        return Optional.ofNullable(lastRun);
    }

    /** The backlog counted after the last run, or -1 before the first. */
    public long lastBacklog() {
        return lastBacklog;
    }

    @Override
    public synchronized void start() {
        if (built() == null) {
            return;
        }
        scheduler = new ThreadPoolTaskScheduler();
        scheduler.setThreadNamePrefix("retrysafe-completer-");
        scheduler.setDaemon(true);
        scheduler.initialize();
        future = scheduler.scheduleWithFixedDelay(() -> {
            try {
                runNow();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "the completer of phased operations failed; it runs again after its interval", e);
            }
        }, Instant.now().plus(interval), interval); // the first run one interval after start, as every later one
    }

    @Override
    public synchronized void stop() {
        if (future != null) {
            future.cancel(false);
        }
        if (scheduler != null) {
            scheduler.shutdown();
        }
        future = null;
        scheduler = null;
    }

    @Override
    public synchronized boolean isRunning() {
        return scheduler != null;
    }
}
