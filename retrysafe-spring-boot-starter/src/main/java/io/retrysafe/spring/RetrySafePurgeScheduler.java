package io.retrysafe.spring;

import io.retrysafe.jdbc.JdbcPurger;
import io.retrysafe.jdbc.PartitionMaintainer;
import io.retrysafe.jdbc.PurgeResult;
import java.lang.System.Logger.Level;
import java.time.ZoneId;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Consumer;
import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.scheduling.support.CronTrigger;

/**
 * Runs the purge on a cron schedule ({@code retrysafe.purge.cron}, 03:00 UTC by default). Every
 * instance schedules it; the purge's database lock lets one run and the others skip. With a table
 * partitioned by expiry day, the partitions are also maintained once at start. Stopping interrupts a run
 * in progress, which stops after its batch in flight (at once in a pause) and releases its lock; the stop
 * waits up to 10 s for that, so that the run lets go of its connection before the pool closes.
 */
public final class RetrySafePurgeScheduler implements SmartLifecycle {
    private static final System.Logger LOG = System.getLogger(RetrySafePurgeScheduler.class.getName());

    private final JdbcPurger purger;
    private final CronTrigger trigger;
    private final Consumer<PurgeResult> ran;
    private final Consumer<PartitionMaintainer.Report> maintained;
    private ThreadPoolTaskScheduler scheduler;
    private ScheduledFuture<?> future;

    RetrySafePurgeScheduler(JdbcPurger purger, String cron, ZoneId zone, Consumer<PurgeResult> ran,
            Consumer<PartitionMaintainer.Report> maintained) {
        this.purger = purger;
        this.trigger = new CronTrigger(cron, zone);
        this.ran = ran;
        this.maintained = maintained;
    }

    JdbcPurger purger() {
        return purger;
    }

    /** Runs one purge now; what the schedule calls. */
    public PurgeResult purgeNow() {
        PurgeResult result = purger.purge();
        if (result.ran()) {
            ran.accept(result);
        }
        if (result.partitions() != null && result.partitions().ran()) {
            maintained.accept(result.partitions());
        }
        return result;
    }

    @Override
    public synchronized void start() {
        scheduler = new ThreadPoolTaskScheduler();
        scheduler.setThreadNamePrefix("retrysafe-purge-");
        scheduler.setDaemon(true);
        scheduler.setAwaitTerminationSeconds(10);
        scheduler.initialize();
        if (purger.maintainer() != null) {
            scheduler.execute(() -> {
                try {
                    PartitionMaintainer.Report report = purger.maintainer().maintain();
                    if (report.ran()) {
                        maintained.accept(report);
                    }
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, "partition maintenance at start failed; every purge runs it again", e);
                }
            });
        }
        future = scheduler.schedule(() -> {
            try {
                purgeNow();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "purge failed; it runs again at its next time", e);
            }
        }, trigger);
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
