package io.retrysafe.cli;

import io.retrysafe.KeyLint;
import io.retrysafe.KeyLint.Finding;
import io.retrysafe.KeyLint.LintReport;
import io.retrysafe.KeyRules;
import java.time.Clock;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Checks keys the way a reviewer would: what the server refuses, and what it accepts but protects badly. */
@Command(name = "lint", mixinStandardHelpOptions = true,
        description = {"Check keys: what the server refuses, and what protects an intent badly.",
                "Errors for keys the server refuses (400), warnings for keys it accepts but "
                + "that protect an intent badly (short, low entropy, a timestamp, a counter, a UUIDv1, needs quoting).",
                "Put -- before keys that start with a dash."},
        exitCodeListHeading = Exit.HEADING,
        exitCodeList = {"0:every key clean", "1:warnings, no errors", "2:a key the server refuses, or a usage error"})
final class LintCommand extends BaseCommand {
    @Parameters(arity = "1..*", paramLabel = "KEY", description = "the keys to check")
    List<String> keys;

    @Option(names = "--min-length", paramLabel = "N",
            description = "the server's KeyRules minimum length (default: " + KeyRules.DEFAULT_MIN_LENGTH + ")")
    Integer minLength;

    @Option(names = "--max-length", paramLabel = "N",
            description = "the server's KeyRules maximum length (default: " + KeyRules.DEFAULT_MAX_LENGTH + ")")
    Integer maxLength;

    @Override
    int run() {
        KeyRules.Builder rules = KeyRules.custom();
        if (minLength != null) {
            rules.minLength(minLength);
        }
        if (maxLength != null) {
            rules.maxLength(maxLength);
        }
        KeyRules keyRules = rules.build();
        int clean = 0;
        int warned = 0;
        int refused = 0;
        for (String key : keys) {
            LintReport report = KeyLint.lint(key, keyRules, Clock.systemUTC());
            String bits = String.format(Locale.ROOT, "~%.0f bits", report.estimatedEntropyBits());
            if (report.isClean()) {
                clean++;
                out().println(quote(key) + ": ok (" + bits + ")");
                continue;
            }
            if (report.hasErrors()) {
                refused++;
            } else {
                warned++;
            }
            long errors = report.findings().stream().filter(f -> f.severity() == KeyLint.Severity.ERROR).count();
            out().println(quote(key) + ": " + (errors > 0 ? "refused by the server" : "accepted, with warnings")
                    + " (" + bits + ")");
            for (Finding f : report.findings()) {
                out().println("  " + f.severity() + " " + f.code() + ": " + f.message());
            }
        }
        if (keys.size() > 1) {
            out().println(keys.size() + " keys: " + clean + " clean, " + warned + " with warnings, " + refused
                    + " refused");
        }
        out().flush();
        return refused > 0 ? Exit.USAGE : warned > 0 ? Exit.NOTHING : Exit.OK;
    }

    /** The key in double quotes, with quotes, backslashes and anything outside printable ASCII escaped. */
    static String quote(String key) {
        StringBuilder s = new StringBuilder(key.length() + 2).append('"');
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == '"' || c == '\\') {
                s.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                s.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            } else {
                s.append(c);
            }
        }
        return s.append('"').toString();
    }
}
