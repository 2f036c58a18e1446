package io.retrysafe.cli;

/** The exit codes of every command; the help text and docs/operations.md list the same. */
final class Exit {
    /** Done; for {@code lint}, every key is clean. */
    static final int OK = 0;
    /** {@code lint} found warnings only; or nothing was found or changed ({@code inspect}, {@code list}, {@code release}, a skipped {@code purge}). */
    static final int NOTHING = 1;
    /** A usage error or bad input: unknown option, bad value, a key that breaks the rules, a refused confirmation. */
    static final int USAGE = 2;
    /** The database is unreachable, or a statement failed. */
    static final int FAILED = 3;

    static final String HEADING = "%nExit codes:%n";
    static final String LINE_OK = "0:done";
    static final String LINE_USAGE = "2:usage error or bad input";
    static final String LINE_FAILED = "3:database unreachable, or a statement failed";
    static final String ROOT_OK = "0:done (lint: every key clean)";
    static final String ROOT_NOTHING = "1:lint found warnings; or nothing found or changed (inspect, list, release, "
            + "a skipped purge)";
    static final String ROOT_USAGE = "2:usage error or bad input (lint: a key the server refuses; release: not confirmed)";

    private Exit() {
    }
}
