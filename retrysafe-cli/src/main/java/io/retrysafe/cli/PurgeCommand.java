package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.JdbcPurger;
import io.retrysafe.jdbc.PartitionMaintainer;
import io.retrysafe.jdbc.PurgeResult;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** One purge run now, as the daily job does it: bounded batches, under the cluster-wide purge lock. */
@Command(name = "purge", mixinStandardHelpOptions = true,
        description = {"Delete expired records now, in batches, under the purge lock.",
                "As the daily job does it: in batches, each its own transaction, "
                + "under the purge lock (an instance purging at the same time makes this run skip).",
                "--dry-run counts what would be deleted (or dropped) and deletes nothing.",
                "A table partitioned by expiry day: drops the days that are over whole, creates the days ahead,",
                "and deletes in batches only from its default partition."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {"0:purged (or counted)", "1:skipped: another instance holds the purge lock", Exit.LINE_USAGE,
                Exit.LINE_FAILED})
final class PurgeCommand extends BaseCommand {
    @Mixin
    ConnectionOptions connection;

    @Option(names = "--dry-run", description = "count the expired records, delete nothing")
    boolean dryRun;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + JdbcPurger.DEFAULT_BATCH_SIZE,
            description = "rows deleted per transaction (default: ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--max-batches", paramLabel = "N", defaultValue = "" + JdbcPurger.DEFAULT_MAX_BATCHES,
            description = "batches in this run at most; the next run continues (default: ${DEFAULT-VALUE})")
    int maxBatches;

    @Option(names = "--max-duty-cycle", paramLabel = "SHARE", defaultValue = "" + JdbcPurger.DEFAULT_MAX_DUTY_CYCLE,
            description = "share of the run's time its batches may take, more than 0 and at most 1: after a batch"
                    + " of t it pauses t x (1/SHARE - 1), so the run takes 1/SHARE as long and claims compete with it"
                    + " less often (default: ${DEFAULT-VALUE}, back to back)")
    double maxDutyCycle;

    @Override
    int run() {
        // Checks the values before connecting.
        Database.offline(ConnectionOptions.table(connection.table, root().env()), null).purger().batchSize(batchSize)
                .maxBatches(maxBatches).maxDutyCycle(maxDutyCycle).build();
        Database db = open(connection);
        if (dryRun) {
            long bound = (long) batchSize * maxBatches;
            if (db.store.layout() == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
                // Whole days are dropped and only the default partition is deleted from in batches:
                // today's expired rows stay until their day is over.
                PartitionMaintainer.Preview p = db.store.partitions().build().preview();
                out().println("dry run: " + p.dropped().size() + " expired day partitions would be dropped"
                        + list(p.dropped()) + " with " + p.rowsInDropped() + " records, and " + p.expiredInDefault()
                        + " expired records deleted from the default partition (batches of " + batchSize + ")"
                        + (p.expiredInDefault() > bound ? "; one run deletes at most " + bound
                                + ", the next run continues" : ""));
                out().println(p.expiredKept() + " expired records stay: their day partitions still hold live"
                        + " records or their day is not over");
            } else {
                long expired = db.admin.countExpired();
                out().println("dry run: " + expired + " expired records would be deleted from " + db.store.table()
                        + " (batches of " + batchSize + ")"
                        + (expired > bound ? "; one run deletes at most " + bound + ", the next run continues" : ""));
            }
            out().flush();
            return Exit.OK;
        }
        PurgeResult result = db.store.purger().batchSize(batchSize).maxBatches(maxBatches).maxDutyCycle(maxDutyCycle)
                .build().purge();
        if (!result.ran()) {
            out().println("skipped: another instance holds the purge lock of " + db.store.table() + "; nothing deleted");
            out().flush();
            return Exit.NOTHING;
        }
        PartitionMaintainer.Report p = result.partitions();
        if (p != null) {
            out().println("dropped " + p.dropped().size() + " expired day partitions" + list(p.dropped())
                    + ", created " + p.created().size() + list(p.created()) + ", moved " + p.movedFromDefault()
                    + " records from the default partition (" + p.defaultPartitionRows() + " left there)");
            if (!p.failed().isEmpty()) {
                out().println("failed (the next run tries again): " + String.join("; ", p.failed()));
            }
        }
        out().println("deleted " + result.deleted() + " expired records from " + db.store.table() + " in "
                + result.batches() + (result.batches() == 1 ? " batch, " : " batches, ") + result.took().toMillis() + " ms"
                + (maxDutyCycle < 1 ? " (paced: batches at most " + maxDutyCycle + " of the time)" : ""));
        if (!result.finished()) {
            out().println("stopped at --max-batches " + maxBatches + " with expired records left; the next run"
                    + " continues (if every run stops here, records expire faster than the purge deletes them)");
        }
        out().flush();
        return Exit.OK;
    }

    private static String list(java.util.List<String> names) {
        return names.isEmpty() ? "" : " (" + String.join(", ", names) + ")";
    }
}
