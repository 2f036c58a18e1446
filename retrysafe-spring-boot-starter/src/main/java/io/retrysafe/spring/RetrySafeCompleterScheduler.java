package io.retrysafe.spring;

import io.retrysafe.PhaseCompleter;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.function.LongConsumer;
import java.util.function.Supplier;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

/**
 * Runs the completer of phased operations every {@code retrysafe.phases.completer.interval} (30 s by default)
 * after the last run ended, and reports its backlog after each. Every instance schedules it; the completer's
 * database lock lets one run at a time. Does nothing when the application declares no phased operation
 * ({@code PhasedOperation} bean or {@code @Idempotent} method that takes {@code Phases}).
 */
public final class RetrySafeCompleterScheduler implements SmartLifecycle {
    private static final System.Logger LOG = System.getLogger(RetrySafeCompleterScheduler.class.getName());

    private final Supplier<PhaseCompleter<?>> build;
    private volatile PhaseCompleter<?> completer;
    private volatile boolean built;
    private final Duration interval;
    private final LongConsumer backlog;
    private volatile PhaseCompleter.Run lastRun;
    private volatile long lastBacklog = -1;
    private ThreadPoolTaskScheduler scheduler;
    private ScheduledFuture<?> future;

    /** @param build the completer, or null when there is nothing to complete; called once, at start */
    RetrySafeCompleterScheduler(Supplier<PhaseCompleter<?>> build, Duration interval, LongConsumer backlog) {
        this.build = build;
        this.interval = interval;
        this.backlog = backlog;
    }

    /** The completer, or empty when the application declares no phased operation. */
    public Optional<PhaseCompleter<?>> completer() {
        return Optional.ofNullable(built());
    }

    /** The operations are known once every bean exists: built at start, or at the first use before it. */
    private PhaseCompleter<?> built() {
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
        PhaseCompleter<?> completer = built();
        if (completer == null) {
            throw new IllegalStateException("the application declares no PhasedOperation bean: nothing to complete");
        }
        PhaseCompleter.Run run = completer.runOnce();
        lastRun = run;
        long left = completer.backlog();
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
