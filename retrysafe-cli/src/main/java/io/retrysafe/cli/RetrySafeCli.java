package io.retrysafe.cli;

import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code retrysafe} command: make and lint keys, and operate a JDBC store's records table.
 *
 * <pre>
 * java -jar retrysafe-cli.jar keygen --count 3
 * RETRYSAFE_JDBC_URL=jdbc:postgresql://db/app retrysafe list --status IN_PROGRESS --older-than 5m
 * </pre>
 */
@Command(name = "retrysafe", mixinStandardHelpOptions = true, versionProvider = RetrySafeCli.Version.class,
        description = {"Make and check idempotency keys, and operate RetrySafe's records table "
                + "(PostgreSQL or MariaDB)."},
        subcommands = {KeygenCommand.class, LintCommand.class, InspectCommand.class, ListCommand.class,
                ReleaseCommand.class, PurgeCommand.class, StatsCommand.class, PhasesCommand.class, SchemaCommand.class,
                ConsoleCommand.class},
        footerHeading = "%nConnection:%n",
        footer = {"--url, --user, --password, --table, or the environment: RETRYSAFE_JDBC_URL, RETRYSAFE_JDBC_USER, "
                + "RETRYSAFE_JDBC_PASSWORD, RETRYSAFE_TABLE. Flags win. The password is never printed.",
                "Keys are shown as their digest (12 hex digits of SHA-256 over scope and key), as in the logs."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {Exit.ROOT_OK, Exit.ROOT_NOTHING, Exit.ROOT_USAGE, Exit.LINE_FAILED})
public final class RetrySafeCli implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--verbose", description = "On failure, print the stack trace too.")
    boolean verbose;

    private final Map<String, String> env;
    private final Prompter prompter;

    /** Settings from the process's environment; confirmations on its console. */
    public RetrySafeCli() {
        this(System.getenv(), Prompter.console());
    }

    RetrySafeCli(Map<String, String> env, Prompter prompter) {
        this.env = Map.copyOf(env);
        this.prompter = prompter;
    }

    Map<String, String> env() {
        return env;
    }

    Prompter prompter() {
        return prompter;
    }

    @Override
    public Integer call() {
        throw new ParameterException(spec.commandLine(), "Missing command: one of "
                + String.join(", ", spec.subcommands().keySet()));
    }

    public static void main(String[] args) {
        // Library log lines (the purge's summary, at INFO) only with --verbose: a command prints its own results.
        boolean verbose = Arrays.asList(args).contains("--verbose");
        Logger.getLogger("").setLevel(verbose ? Level.INFO : Level.WARNING);
        System.exit(commandLine().execute(args));
    }

    /**
     * The command line {@link #main} runs: as {@code new CommandLine(new RetrySafeCli())}, except that a
     * usage error (unknown option, bad value) is one line on stderr, with a pointer to {@code --help},
     * instead of the whole usage text.
     */
    public static CommandLine commandLine() {
        CommandLine commandLine = new CommandLine(new RetrySafeCli());
        commandLine.setParameterExceptionHandler(RetrySafeCli::usageError);
        return commandLine;
    }

    private static int usageError(ParameterException e, String[] args) {
        CommandLine c = e.getCommandLine();
        String name = c.getCommandSpec().qualifiedName();
        String suggestion = "";
        if (e instanceof UnmatchedArgumentException unmatched && !unmatched.getSuggestions().isEmpty()) {
            suggestion = "; did you mean " + String.join(" or ", unmatched.getSuggestions()) + "?";
        }
        // A password misplaced on the command line may be echoed by the message: mask it, as everywhere.
        String message = Redactor.oneLine(String.valueOf(e.getMessage()));
        for (int i = 0; i < args.length; i++) {
            String password = args[i].startsWith("--password=") ? args[i].substring("--password=".length())
                    : args[i].equals("--password") && i + 1 < args.length ? args[i + 1] : null;
            message = new Redactor(password).clean(message);
        }
        if (c.getCommandSpec().root().userObject() instanceof RetrySafeCli cli) {
            message = new Redactor(cli.env.get(ConnectionOptions.ENV_PASSWORD)).clean(message);
        }
        c.getErr().println(name + ": " + message + suggestion + " (see " + name + " --help)");
        c.getErr().flush();
        return c.getCommandSpec().exitCodeOnInvalidInput();
    }

    /** The version from the jar's manifest. */
    static final class Version implements IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = RetrySafeCli.class.getPackage().getImplementationVersion();
            return new String[] {"retrysafe " + (v == null ? "(development build)" : v)};
        }
    }
}
