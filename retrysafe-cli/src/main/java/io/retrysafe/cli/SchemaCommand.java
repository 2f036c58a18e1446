package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.PartitionMaintainer;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** The records table's DDL: printed for a migration tool, or applied. */
@Command(name = "schema", mixinStandardHelpOptions = true,
        description = {"Print or apply the records table's DDL.",
                "CREATE TABLE / INDEX IF NOT EXISTS: print it for your migrations, or apply it."},
        subcommands = {SchemaCommand.Print.class, SchemaCommand.Apply.class},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {Exit.LINE_OK, Exit.LINE_USAGE, Exit.LINE_FAILED})
final class SchemaCommand extends BaseCommand {

    @Override
    int run() {
        throw new ParameterException(spec.commandLine(), "Missing command: print or apply");
    }

    @Command(name = "print", mixinStandardHelpOptions = true,
            description = "Print the DDL for a dialect; connects to nothing.",
            exitCodeListHeading = Exit.HEADING,
            exitCodeList = {Exit.LINE_OK, Exit.LINE_USAGE})
    static final class Print extends BaseCommand {
        @Option(names = "--dialect", required = true, paramLabel = "postgresql|mariadb",
                converter = Converters.DialectConverter.class, description = "the database")
        JdbcDialect dialect;

        @Option(names = "--table", paramLabel = "TABLE",
                description = "records table, optionally schema-qualified (default: env "
                        + ConnectionOptions.ENV_TABLE + ", else " + JdbcIdempotencyStore.DEFAULT_TABLE + ")")
        String table;

        @Option(names = "--layout", paramLabel = "standard|partitioned", defaultValue = "standard",
                converter = Converters.LayoutConverter.class,
                description = "partitioned: the table partitioned by expiry day, PostgreSQL only (default: ${DEFAULT-VALUE})")
        JdbcLayout layout;

        @Override
        int run() {
            if (layout == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY && dialect != JdbcDialect.POSTGRESQL) {
                throw new CliException(Exit.USAGE, "--layout partitioned needs --dialect postgresql");
            }
            out().print(Database.offline(ConnectionOptions.table(table, root().env()), dialect, layout).schema());
            out().flush();
            return Exit.OK;
        }
    }

    @Command(name = "apply", mixinStandardHelpOptions = true,
            description = "Create the table and its index if they do not exist; safe to run again.",
            exitCodeListHeading = Exit.HEADING,
            exitCodeList = {Exit.LINE_OK, Exit.LINE_USAGE, Exit.LINE_FAILED})
    static final class Apply extends BaseCommand {
        @Mixin
        ConnectionOptions connection;

        @Option(names = "--dialect", paramLabel = "postgresql|mariadb", converter = Converters.DialectConverter.class,
                description = "the database (default: detected); refused if the database is another")
        JdbcDialect dialect;

        @Option(names = "--layout", paramLabel = "standard|partitioned", converter = Converters.LayoutConverter.class,
                description = {"partitioned: the table partitioned by expiry day, PostgreSQL only; also creates",
                        "today's partition and the next " + PartitionMaintainer.DEFAULT_DAYS_AHEAD
                        + " days' (default: the existing table's, else standard)"})
        JdbcLayout layout;

        @Override
        int run() {
            Database db = open(connection, layout);
            if (dialect != null && dialect != db.dialect) {
                throw new CliException(Exit.USAGE, "--dialect " + dialect.name().toLowerCase(Locale.ROOT)
                        + ", but the database is " + db.dialect.name().toLowerCase(Locale.ROOT) + "; nothing applied");
            }
            db.store.createSchema();
            out().println("schema applied: " + db.describe() + " has the records table and its index");
            if (db.layout == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
                PartitionMaintainer.Report report = db.store.partitions().build().maintain();
                out().println(report.ran() ? "partitions created: " + (report.created().isEmpty() ? "none, all there"
                        : String.join(", ", report.created()))
                        : "partitions not created now: another instance is maintaining them");
                if (!report.failed().isEmpty()) {
                    out().println("partitions failed (the next purge tries again): " + String.join("; ", report.failed()));
                }
            }
            out().flush();
            return Exit.OK;
        }
    }
}
