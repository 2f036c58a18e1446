package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcAdmin;
import io.retrysafe.jdbc.JdbcAdmin.RecordSummary;
import io.retrysafe.spi.RecordStatus;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Lists live records by status and age, oldest first: stuck keys are IN_PROGRESS ones older than their work takes. */
@Command(name = "list", mixinStandardHelpOptions = true,
        description = {"List live records by status and age (stuck keys).",
                "Oldest first, keys as digests. Stuck keys: "
                + "list --status IN_PROGRESS --older-than <longer than the operation ever takes>."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {"0:records listed", "1:no record matches", Exit.LINE_USAGE, Exit.LINE_FAILED})
final class ListCommand extends BaseCommand {
    @Mixin
    ConnectionOptions connection;

    @Option(names = "--status", paramLabel = "STATUS", converter = Converters.StatusConverter.class,
            description = "IN_PROGRESS, COMPLETED or FAILED (default: any)")
    RecordStatus status;

    @Option(names = "--older-than", paramLabel = "AGE", defaultValue = "0s",
            converter = Converters.DurationConverter.class,
            description = "created at least this long ago: 30s, 5m, 2h, 7d, 1h30m, PT5M (default: ${DEFAULT-VALUE})")
    Duration olderThan;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "100",
            description = "at most this many, 1 to " + JdbcAdmin.MAX_LIMIT + " (default: ${DEFAULT-VALUE})")
    int limit;

    @Override
    int run() {
        Database db = open(connection);
        List<RecordSummary> records = db.admin.list(status, olderThan, limit);
        if (records.isEmpty()) {
            out().println("no live " + (status == null ? "" : status + " ") + "record"
                    + (olderThan.isZero() ? "" : " created more than "
                            + olderThan.toString().substring(2).toLowerCase(Locale.ROOT) + " ago")
                    + " in " + db.store.table());
            out().flush();
            return Exit.NOTHING;
        }
        int scopeWidth = Math.max("SCOPE".length(), records.stream().mapToInt(r -> r.scope().length()).max().orElse(0));
        String format = "%-" + scopeWidth + "s  %-12s  %-11s  %7s  %-20s  %-20s  %-20s%n";
        out().printf(format, "SCOPE", "KEY DIGEST", "STATUS", "ATTEMPT", "CREATED", "LEASE UNTIL", "EXPIRES");
        for (RecordSummary r : records) {
            out().printf(format, r.scope(), r.keyDigest(), r.status(), r.attempt(), seconds(r.createdAt()),
                    seconds(r.leaseExpiresAt()), seconds(r.expiresAt()));
        }
        if (records.size() == limit) {
            out().println("(the oldest " + limit + "; there may be more: raise --limit or narrow --older-than)");
        }
        out().flush();
        return Exit.OK;
    }

    private static String seconds(Instant instant) {
        return instant == null ? "-" : instant.truncatedTo(ChronoUnit.SECONDS).toString();
    }
}
