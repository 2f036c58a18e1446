package io.retrysafe.cli;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.spi.IdempotencyRecord;
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
        Release.Target target = Release.find(db.admin, scope, key);
        if (target instanceof Release.Absent) {
            return nothing(Release.absent(k, db.store.table()));
        }
        if (target instanceof Release.NotInProgress n) {
            return nothing(Release.notInProgress(k, n.status()));
        }
        IdempotencyRecord r = ((Release.Stuck) target).record();
        out().println("scope \"" + scope + "\", key digest " + k.digest() + ": IN_PROGRESS, attempt " + r.attempt()
                + ", created " + time(r.createdAt()) + ", lease until " + time(r.leaseExpiresAt()));
        out().flush();
        if (!yes) {
            String answer = prompter.readLine("type the key's digest (" + k.digest() + ") to confirm: ");
            if (!Release.isConfirmation(k, answer)) {
                throw new CliException(Exit.USAGE, "not confirmed: the answer was not the key's digest; nothing changed");
            }
        }
        if (!Release.confirmed(db.admin, scope, key, r.attempt())) {
            return nothing(Release.changed(r.attempt()));
        }
        out().println(Release.released(k, r.attempt()));
        out().flush();
        return Exit.OK;
    }

    private int nothing(String message) {
        out().println(message);
        out().flush();
        return Exit.NOTHING;
    }
}
