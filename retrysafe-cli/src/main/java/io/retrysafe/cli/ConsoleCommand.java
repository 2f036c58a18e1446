package io.retrysafe.cli;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.Base64;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Serves the operator's console over the records table until stopped. */
@Command(name = "console", mixinStandardHelpOptions = true,
        description = {"Serve the operator's console: records by state, stuck keys, one record, keys.",
                "A small web application over the same table the other commands reach: an overview with the purge's "
                        + "backlog, stuck keys with inspect and a confirmed release, one record in full, and the key "
                        + "maker and checker. Loopback only unless --allow-remote; every request needs the access "
                        + "token, made at start and printed in the address to open, unless given.",
                "Runs until stopped (Ctrl-C)."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {Exit.LINE_USAGE, Exit.LINE_FAILED})
final class ConsoleCommand extends BaseCommand {
    static final String ENV_TOKEN = "RETRYSAFE_CONSOLE_TOKEN";
    static final int DEFAULT_PORT = 7007;

    @Mixin
    ConnectionOptions connection;

    @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = "127.0.0.1",
            description = "address to listen on (default: ${DEFAULT-VALUE}); one that is not loopback needs --allow-remote")
    String bind;

    @Option(names = "--port", paramLabel = "PORT", defaultValue = "" + DEFAULT_PORT,
            description = "port, 0 for any free one (default: ${DEFAULT-VALUE})")
    int port;

    @Option(names = "--allow-remote", description = "allow --bind to name an address other machines reach: the "
            + "console speaks plain HTTP, so put it behind TLS")
    boolean allowRemote;

    @Option(names = "--token", paramLabel = "TOKEN", description = "the access token, at least "
            + ConsoleConfig.MIN_TOKEN_LENGTH + " characters (default: env " + ENV_TOKEN + ", else one made at start "
            + "and printed; prefer the environment: a command line is visible to other users of the machine)")
    String token;

    @Option(names = "--reveal-keys", description = "let a record's page show its raw key when asked (default: digests only)")
    boolean revealKeys;

    @Override
    int run() throws InterruptedException {
        InetAddress address = address(bind);
        if (!address.isLoopbackAddress() && !allowRemote) {
            throw new CliException(Exit.USAGE, "--bind " + bind + " is not a loopback address: the console would answer "
                    + "to the network; pass --allow-remote too if that is meant (and put it behind TLS)");
        }
        if (port < 0 || port > 65_535) {
            throw new CliException(Exit.USAGE, "--port must be between 0 and 65535, but was " + port);
        }
        String given = token != null ? token : root().env().get(ENV_TOKEN);
        boolean made = given == null || given.isEmpty();
        ConsoleConfig config = new ConsoleConfig(new InetSocketAddress(address, port), made ? newToken() : given,
                revealKeys, Clock.systemUTC());
        Database db = open(connection);
        ConsoleServer console = ConsoleServer.start(db, config);
        Runtime.getRuntime().addShutdownHook(new Thread(console::close, "retrysafe-console-stop"));
        out().println("console for " + db.describe());
        out().println(made ? "open " + console.url() + "?token=" + config.token()
                : "open " + console.url() + "?token=<the token from " + (token != null ? "--token" : ENV_TOKEN) + ">");
        out().println("stop with Ctrl-C");
        out().flush();
        Thread.currentThread().join(); // until the process is stopped; the hook closes the server
        return Exit.OK;
    }

    private static InetAddress address(String name) {
        try {
            return InetAddress.getByName(name);
        } catch (UnknownHostException e) {
            throw new CliException(Exit.USAGE, "--bind must be an address of this machine, but \"" + name
                    + "\" does not resolve");
        }
    }

    /** 256 random bits, URL-safe: it travels in the first address and in a cookie. */
    static String newToken() {
        byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }
}
