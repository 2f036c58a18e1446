package io.retrysafe.jdbc;

import io.retrysafe.internal.Require;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Runs a {@link JdbcPurger} once a day at a fixed time, 03:00 UTC by default, on one daemon thread.
 * Every instance of a service may start one: the purge's database lock lets one of them run and
 * the others skip. A failed run is logged and the next day's still happens. With a partitioned table
 * ({@link JdbcLayout#PARTITIONED_BY_EXPIRY_DAY}) the partitions are also maintained once at start, so
 * that a new deployment has its days ahead before the first daily run. Closing it stops a run in
 * progress after its batch in flight (at once in a pause of a paced purge, {@link
 * JdbcPurger.Builder#maxDutyCycle(double)}), so that the run lets go of its lock and its connection before
 * the application closes its pool.
 *
 * <pre>{@code
 * PurgeScheduler scheduler = PurgeScheduler.daily(purger).start();
 * // on shutdown
 * scheduler.close();
 * }</pre>
 *
 * <p>To publish what each run did, as meters for example, pass what to call with its result:
 *
 * <pre>{@code
 * PurgeScheduler.daily(purger, PurgeScheduler.DEFAULT_TIME, PurgeScheduler.DEFAULT_ZONE,
 *         run -> metrics.recordPurge(run.deleted(), run.finished())).start();
 * }</pre>
 */
public final class PurgeScheduler implements AutoCloseable {
    public static final LocalTime DEFAULT_TIME = LocalTime.of(3, 0);
    public static final ZoneId DEFAULT_ZONE = ZoneOffset.UTC;

    /** How long {@link #close()} waits for a run to stop: one batch's delete, which an interrupt cannot cut short. */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(10);

    private static final System.Logger LOG = System.getLogger(PurgeScheduler.class.getName());

    private final JdbcPurger purger;
    private final LocalTime time;
    private final ZoneId zone;
    private final Consumer<? super PurgeResult> onRun;
    private final Clock clock;
    private final ScheduledExecutorService executor;

    private PurgeScheduler(JdbcPurger purger, LocalTime time, ZoneId zone, Consumer<? super PurgeResult> onRun,
            Clock clock) {
        this.purger = purger;
        this.time = time;
        this.zone = zone;
        this.onRun = onRun;
        this.clock = clock;
        this.executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "retrysafe-purge");
            t.setDaemon(true);
            return t;
        });
    }

    /** Daily at 03:00 UTC. */
    public static PurgeScheduler daily(JdbcPurger purger) {
        return daily(purger, DEFAULT_TIME, DEFAULT_ZONE);
    }

    public static PurgeScheduler daily(JdbcPurger purger, LocalTime time, ZoneId zone) {
        return daily(purger, time, zone, run -> { });
    }

    /**
     * With {@code onRun} called on the scheduler's thread with the result of each run that ran (not of one skipped
     * because another instance held the lock); what it throws is logged, and the schedule goes on.
     */
    public static PurgeScheduler daily(JdbcPurger purger, LocalTime time, ZoneId zone,
            Consumer<? super PurgeResult> onRun) {
        return daily(purger, time, zone, onRun, Clock.systemUTC());
    }

    /** For tests: a clock that says when now is. */
    static PurgeScheduler daily(JdbcPurger purger, LocalTime time, ZoneId zone, Consumer<? super PurgeResult> onRun,
            Clock clock) {
        return new PurgeScheduler(Require.notNull(purger, "purger"), Require.notNull(time, "time"),
                Require.notNull(zone, "zone"), Require.notNull(onRun, "onRun"), Require.notNull(clock, "clock"));
    }

    /** The first run strictly after {@code now}. */
    public Instant nextRun(Instant now) {
        ZonedDateTime local = now.atZone(zone);
        ZonedDateTime candidate = local.with(time);
        if (!candidate.isAfter(local)) {
            candidate = local.plusDays(1).with(time);
        }
        return candidate.toInstant();
    }

    public PurgeScheduler start() {
        PartitionMaintainer maintainer = purger.maintainer();
        if (maintainer != null) {
            executor.execute(() -> {
                try {
                    maintainer.maintain();
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, "partition maintenance at start failed; the daily purge runs it again", e);
                }
            });
        }
        scheduleNext();
        return this;
    }

    private void scheduleNext() {
        if (executor.isShutdown()) {
            return;
        }
        Instant now = clock.instant();
        Instant next = nextRun(now);
        LOG.log(Level.DEBUG, () -> "next purge at " + next);
        executor.schedule(this::runAndReschedule, Duration.between(now, next).toMillis(), TimeUnit.MILLISECONDS);
    }

    private void runAndReschedule() {
        try {
            PurgeResult result = purger.purge();
            if (result.ran()) {
                report(result);
            }
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "purge failed; the next run is tomorrow", e);
        } finally {
            scheduleNext();
        }
    }

    private void report(PurgeResult result) {
        try {
            onRun.accept(result);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "the purge ran, but what it was handed to threw", e);
        }
    }

    /** Stops the schedule, interrupts a run in progress and waits (up to 10 s) until it has stopped. */
    @Override
    public void close() {
        executor.shutdownNow();
        try {
            if (!executor.awaitTermination(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.log(Level.WARNING, "the purge in progress did not stop within " + CLOSE_WAIT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
