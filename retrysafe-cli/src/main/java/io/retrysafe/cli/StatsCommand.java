package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcAdmin.AgeBucket;
import io.retrysafe.jdbc.JdbcAdmin.Stats;
import io.retrysafe.spi.RecordStatus;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** What the records table holds now. */
@Command(name = "stats", mixinStandardHelpOptions = true,
        description = {"Count records by status and age, expired ones, and the table's size.",
                "Live records by status and by age, expired ones not purged yet, "
                + "and the table's size on disk. Reads the whole table."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {Exit.LINE_OK, Exit.LINE_USAGE, Exit.LINE_FAILED})
final class StatsCommand extends BaseCommand {
    @Mixin
    ConnectionOptions connection;

    @Override
    int run() {
        Database db = open(connection);
        Stats stats = db.admin.stats();
        row("table", db.describe());
        row("size", stats.tableBytes() + " bytes (" + human(stats.tableBytes()) + ")");
        row("live records", stats.live());
        for (RecordStatus status : RecordStatus.values()) {
            row("  " + status, stats.count(status));
        }
        out().println("live records by age");
        for (AgeBucket bucket : AgeBucket.values()) {
            row("  " + bucket.label(), stats.byAge().get(bucket));
        }
        row("expired, not purged", stats.expired());
        out().flush();
        return Exit.OK;
    }

    private void row(String name, Object value) {
        out().printf("%-20s %s%n", name, value);
    }

    static String human(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }
}
