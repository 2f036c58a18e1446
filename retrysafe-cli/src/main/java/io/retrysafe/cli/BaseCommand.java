package io.retrysafe.cli;

import io.retrysafe.MalformedJsonException;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.StoreUnavailableException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.sql.SQLException;
import java.time.DateTimeException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * What every command shares: its output streams, the root's environment, and one way to fail: one
 * line on stderr naming the command, the password never in it, a stack trace only with
 * {@code --verbose}, and the exit code of {@link Exit}.
 */
abstract class BaseCommand implements Callable<Integer> {
    /** SQLStates of a missing table: PostgreSQL undefined_table, MariaDB ER_NO_SUCH_TABLE. */
    private static final Set<String> NO_SUCH_TABLE = Set.of("42P01", "42S02");

    @Spec
    CommandSpec spec;

    @Option(names = "--verbose", description = "On failure, print the stack trace too.")
    boolean verbose;

    private Redactor redactor = new Redactor(null);

    /** The command's work; returns its exit code. */
    abstract int run() throws Exception;

    @Override
    public final Integer call() {
        try {
            return run();
        } catch (ParameterException e) {
            throw e; // a usage error: picocli's parameter exception handler reports it
        } catch (CliException e) {
            return fail(e.exitCode(), e.getMessage(), e);
        } catch (StoreUnavailableException e) {
            return fail(Exit.FAILED, e.getMessage() + hint(e), e);
        } catch (InvalidKeyException | MalformedJsonException | IllegalArgumentException | IllegalStateException
                | DateTimeException e) {
            return fail(Exit.USAGE, e.getMessage(), e);
        } catch (SQLException e) {
            return fail(Exit.FAILED, Redactor.sqlMessage(e), e);
        } catch (Exception e) {
            return fail(Exit.FAILED, "failed: " + e, e);
        }
    }

    private static String hint(StoreUnavailableException e) {
        return e.getCause() instanceof SQLException sql && NO_SUCH_TABLE.contains(sql.getSQLState())
                ? " (create the table with: retrysafe schema apply)" : "";
    }

    private int fail(int code, String message, Throwable e) {
        PrintWriter err = err();
        err.println(spec.qualifiedName() + ": " + redactor.clean(Redactor.oneLine(String.valueOf(message))));
        if (verbose || root().verbose) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            err.print(redactPreservingLines(trace.toString()));
        }
        err.flush();
        return code;
    }

    private String redactPreservingLines(String text) {
        StringBuilder out = new StringBuilder();
        for (String line : text.split("\\R")) {
            out.append(redactor.clean(line)).append(System.lineSeparator());
        }
        return out.toString();
    }

    RetrySafeCli root() {
        return (RetrySafeCli) spec.root().userObject();
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    PrintWriter err() {
        return spec.commandLine().getErr();
    }

    /** Resolves the connection settings and connects; from here on the password is masked in every message. */
    Database open(ConnectionOptions options) {
        return open(options, null);
    }

    /** As {@link #open(ConnectionOptions)}; {@code layout}, if not null, is the one a new table gets. */
    Database open(ConnectionOptions options, io.retrysafe.jdbc.JdbcLayout layout) {
        ConnectionOptions.Settings settings = options.resolve(root().env());
        redactor = new Redactor(settings.password());
        return Database.open(settings, layout);
    }

    static String time(Instant instant) {
        return instant == null ? "-" : instant.truncatedTo(ChronoUnit.MILLIS).toString();
    }
}
