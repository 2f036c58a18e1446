package io.retrysafe.cli;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Frees a stuck IN_PROGRESS key so that the next retry runs again, as the next attempt. */
@Command(name = "release", mixinStandardHelpOptions = true,
        description = {"Free a stuck IN_PROGRESS key, so that the next retry runs again.",
                "Its IN_PROGRESS record becomes FAILED, and the next retry with the same "
                + "request runs the operation again as the next attempt. Whoever held it can no longer complete it.",
                "Safe only when the attempt holding the key is dead or hung and its effect did not happen, or is "
                        + "safe to repeat. Asks to type the key's digest to confirm, unless --yes; with no terminal "
                        + "and no --yes it refuses."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {"0:released", "1:no live IN_PROGRESS record: nothing changed",
                "2:usage error, bad input, or not confirmed", Exit.LINE_FAILED})
final class ReleaseCommand extends BaseCommand {
    @Mixin
    ConnectionOptions connection;

    @Option(names = "--scope", required = true, paramLabel = "S", description = "the record's scope")
    String scope;

    @Option(names = "--key", required = true, paramLabel = "K", description = "the key")
    String key;

    @Option(names = "--yes", description = "do not ask for confirmation (scripts)")
    boolean yes;

    @Override
    int run() {
        IdempotencyKey k = IdempotencyKey.of(scope, key);
        Prompter prompter = root().prompter();
        if (!yes && !prompter.available()) {
            throw new CliException(Exit.USAGE, "release needs a confirmation: run it on a terminal, or pass --yes");
        }
        Database db = open(connection);
        Optional<IdempotencyRecord> found = db.admin.inspect(scope, key);
        if (found.isEmpty()) {
            out().println("no live record for scope \"" + scope + "\", key digest " + k.digest() + " in "
                    + db.store.table() + ": nothing to release");
            out().flush();
            return Exit.NOTHING;
        }
        IdempotencyRecord r = found.get();
        if (r.status() != RecordStatus.IN_PROGRESS) {
            out().println("the record of key digest " + k.digest() + " is " + r.status()
                    + ": release frees IN_PROGRESS keys only; nothing changed");
            out().flush();
            return Exit.NOTHING;
        }
        out().println("scope \"" + scope + "\", key digest " + k.digest() + ": IN_PROGRESS, attempt " + r.attempt()
                + ", created " + time(r.createdAt()) + ", lease until " + time(r.leaseExpiresAt()));
        out().flush();
        if (!yes) {
            String answer = prompter.readLine("type the key's digest (" + k.digest() + ") to confirm: ");
            if (answer == null || !answer.strip().equals(k.digest())) {
                throw new CliException(Exit.USAGE, "not confirmed: the answer was not the key's digest; nothing changed");
            }
        }
        // Only the attempt shown: if its lease ran out meanwhile and a retry took over, that one is healthy.
        if (!db.admin.release(scope, key, r.attempt())) {
            out().println("the record changed since it was shown (completed, released, or taken over by attempt "
                    + (r.attempt() + 1) + "); nothing changed");
            out().flush();
            return Exit.NOTHING;
        }
        out().println("released: key digest " + k.digest() + " is FAILED; the next retry with the same request runs as "
                + "attempt " + (r.attempt() + 1));
        out().flush();
        return Exit.OK;
    }
}
