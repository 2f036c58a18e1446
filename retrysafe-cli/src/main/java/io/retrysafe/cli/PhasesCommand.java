package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcAdmin;
import io.retrysafe.jdbc.JdbcPhaseJournal;
import io.retrysafe.spi.PhaseJournal;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The completer's backlog: phased operations nobody holds (released, or their owner's lease ended) that
 * nothing touched for a while. The service's completer drives them to their end; this shows what waits.
 */
@Command(name = "phases", mixinStandardHelpOptions = true,
        description = {"List abandoned phased operations: the completer's backlog.",
                "Operations with saved steps that nobody holds and nothing touched for --idle-for, oldest "
                + "first, keys as digests. The service's completer drives them to their end; a backlog that "
                + "grows means it does not run, or fails (its log and meters say why)."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {"0:abandoned operations listed", "1:none is abandoned", Exit.LINE_USAGE, Exit.LINE_FAILED})
final class PhasesCommand extends BaseCommand {
    @Mixin
    ConnectionOptions connection;

    @Option(names = "--idle-for", paramLabel = "AGE", defaultValue = "5m", converter = Converters.DurationConverter.class,
            description = "untouched at least this long: 30s, 5m, 2h, PT5M (default: ${DEFAULT-VALUE}, the completer's)")
    Duration idleFor;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "100",
            description = "list at most this many, 1 to " + JdbcAdmin.MAX_LIMIT + " (default: ${DEFAULT-VALUE})")
    int limit;

    @Override
    int run() {
        if (limit < 1 || limit > JdbcAdmin.MAX_LIMIT) {
            throw new CliException(Exit.USAGE, "--limit must be 1 to " + JdbcAdmin.MAX_LIMIT + ", but was " + limit);
        }
        Database db = open(connection);
        JdbcPhaseJournal journal = JdbcPhaseJournal.of(db.store);
        long backlog = journal.countAbandoned(idleFor);
        String idle = idleFor.toString().substring(2).toLowerCase(Locale.ROOT);
        out().println("abandoned phased operations (idle " + idle + " or more) in " + db.store.table() + ": " + backlog);
        if (backlog == 0) {
            out().flush();
            return Exit.NOTHING;
        }
        List<PhaseJournal.Abandoned> found = journal.abandoned(idleFor, limit);
        int scopeWidth = Math.max("SCOPE".length(), found.stream().mapToInt(a -> a.key().scope().length()).max().orElse(0));
        String format = "%-" + scopeWidth + "s  %-12s%n";
        out().printf(format, "SCOPE", "KEY DIGEST");
        for (PhaseJournal.Abandoned a : found) {
            out().printf(format, a.key().scope(), a.key().digest());
        }
        if (found.size() < backlog) {
            out().println("(the oldest " + found.size() + "; raise --limit for more)");
        }
        out().flush();
        return Exit.OK;
    }
}
