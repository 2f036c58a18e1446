package io.retrysafe.cli;

import io.retrysafe.IdempotencyKeys;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.format.DateTimeParseException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Makes keys: one per intent, made once and sent unchanged on every retry of it. */
@Command(name = "keygen", mixinStandardHelpOptions = true,
        description = {"Make idempotency keys: UUIDv7, UUIDv4, or derived from the intent.",
                "One per line. A key names one intent: make it once, keep it, and send it unchanged on every retry.",
                "  v7      UUIDv7, time-ordered (the default; keeps the index's inserts at its right edge)",
                "  v4      UUIDv4, random (reveals nothing, not even when it was made)",
                "  intent  SHA-256 of principal, operation, [business date,] payload: the same intent gives "
                        + "the same key, for a client that cannot keep one"},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {Exit.LINE_OK, Exit.LINE_USAGE})
final class KeygenCommand extends BaseCommand {
    static final int MAX_COUNT = 100_000;

    enum Type { v7, v4, intent }

    @Option(names = "--type", defaultValue = "v7", paramLabel = "v7|v4|intent",
            description = "kind of key (default: ${DEFAULT-VALUE})")
    Type type;

    @Option(names = "--count", defaultValue = "1", paramLabel = "N",
            description = "how many keys, 1 to " + MAX_COUNT + " (v7, v4; default: ${DEFAULT-VALUE})")
    int count;

    @Option(names = "--principal", paramLabel = "P", description = "intent: whose intent (a user, a tenant, a client)")
    String principal;

    @Option(names = "--operation", paramLabel = "O", description = "intent: what is intended (create-payment)")
    String operation;

    @Option(names = "--payload-file", paramLabel = "F",
            description = "intent: the payload, the file's bytes as they are (already in one canonical encoding)")
    Path payloadFile;

    @Option(names = "--payload-json", paramLabel = "J",
            description = "intent: the payload as JSON, canonicalized first (member order and spacing do not matter)")
    String payloadJson;

    @Option(names = "--business-date", paramLabel = "yyyy-MM-dd",
            description = "intent: a date that belongs to the intent (a daily run), never the time of sending")
    String businessDate;

    @Override
    int run() {
        if (type != Type.intent) {
            if (principal != null || operation != null || payloadFile != null || payloadJson != null
                    || businessDate != null) {
                throw new CliException(Exit.USAGE, "--principal, --operation, --payload-file, --payload-json and "
                        + "--business-date go with --type intent, but the type was " + type);
            }
            if (count < 1 || count > MAX_COUNT) {
                throw new CliException(Exit.USAGE, "--count must be between 1 and " + MAX_COUNT + ", but was " + count);
            }
            for (int i = 0; i < count; i++) {
                out().println(type == Type.v7 ? IdempotencyKeys.uuidV7() : IdempotencyKeys.uuidV4());
            }
            out().flush();
            return Exit.OK;
        }
        if (count != 1) {
            throw new CliException(Exit.USAGE, "an intent key is the same for the same intent: --count must be 1, but was "
                    + count);
        }
        if (principal == null || operation == null) {
            throw new CliException(Exit.USAGE, "--type intent needs --principal and --operation");
        }
        if ((payloadFile == null) == (payloadJson == null)) {
            throw new CliException(Exit.USAGE, "--type intent needs the payload that tells intents apart: "
                    + "exactly one of --payload-file and --payload-json");
        }
        String key = payloadJson != null
                ? intent(principal, operation, businessDate, payloadJson.getBytes(StandardCharsets.UTF_8), true)
                : intent(principal, operation, businessDate, read(payloadFile), false);
        out().println(key);
        out().flush();
        return Exit.OK;
    }

    /**
     * The intent key of {@code payload}, canonicalized first if it is JSON; the console makes the same.
     * A business date that is not {@code yyyy-MM-dd} is bad input.
     */
    static String intent(String principal, String operation, String businessDate, byte[] payload, boolean json) {
        LocalDate date = null;
        if (businessDate != null) {
            try {
                date = LocalDate.parse(businessDate);
            } catch (DateTimeParseException e) {
                throw new CliException(Exit.USAGE, "--business-date must be a date as yyyy-MM-dd, but was \""
                        + businessDate + "\"");
            }
        }
        if (json) {
            return date == null ? IdempotencyKeys.intentFromJson(principal, operation, payload)
                    : IdempotencyKeys.intentFromJson(principal, operation, date, payload);
        }
        return date == null ? IdempotencyKeys.intent(principal, operation, payload)
                : IdempotencyKeys.intent(principal, operation, date, payload);
    }

    private static byte[] read(Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new CliException(Exit.USAGE, "cannot read --payload-file " + file + ": no such file");
        } catch (IOException e) {
            throw new CliException(Exit.USAGE, "cannot read --payload-file " + file + ": " + e.getMessage());
        }
    }
}
