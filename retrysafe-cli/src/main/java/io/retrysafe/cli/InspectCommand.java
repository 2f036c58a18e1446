package io.retrysafe.cli;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.IdempotencyRecord;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Shows one live record; the key as its digest, the response as its size. */
@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = {"Show the live record of one key.",
                "Status, attempt, lease, expiry, the stored response's status and size. A record past its expiry "
                        + "is absent, purged or not."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {"0:found", "1:no live record", Exit.LINE_USAGE, Exit.LINE_FAILED})
final class InspectCommand extends BaseCommand {
    @Mixin
    ConnectionOptions connection;

    @Option(names = "--scope", required = true, paramLabel = "S", description = "the record's scope")
    String scope;

    @Option(names = "--key", required = true, paramLabel = "K", description = "the key")
    String key;

    @Override
    int run() {
        IdempotencyKey k = IdempotencyKey.of(scope, key); // a malformed key is bad input, before connecting
        Database db = open(connection);
        Optional<IdempotencyRecord> found = db.admin.inspect(scope, key);
        if (found.isEmpty()) {
            out().println("no live record for scope \"" + scope + "\", key digest " + k.digest()
                    + " in " + db.store.table() + " (never stored, expired or purged)");
            out().flush();
            return Exit.NOTHING;
        }
        IdempotencyRecord r = found.get();
        row("scope", r.key().scope());
        row("key digest", r.key().digest());
        row("status", r.status().name());
        row("attempt", Integer.toString(r.attempt()));
        row("fingerprint", r.fingerprint().hex());
        row("created", time(r.createdAt()));
        row("lease until", time(r.leaseExpiresAt()));
        row("completed", time(r.completedAt()));
        row("expires", time(r.expiresAt()));
        row("response", r.response().map(InspectCommand::describe).orElse("-"));
        out().flush();
        return Exit.OK;
    }

    private void row(String name, String value) {
        out().printf("%-12s %s%n", name, value);
    }

    /** Status, header names and body size: a stored body may hold personal data, so it is not printed. */
    static String describe(StoredResponse response) {
        return response.status() + ", headers " + response.headers().keySet() + ", body " + response.bodyLength()
                + " bytes";
    }
}
