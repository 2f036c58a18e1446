package io.retrysafe;

/** A key that is missing or breaks a rule of {@link KeyRules}; answered with {@code 400}. */
public final class InvalidKeyException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    /** The rule a key broke; stable, so that an HTTP layer can map each to a documented problem type. */
    public enum Rule {
        MISSING, EMPTY, TOO_SHORT, TOO_LONG, NOT_PRINTABLE_ASCII, MULTIPLE_VALUES, MALFORMED
    }

    private final Rule rule;

    public InvalidKeyException(Rule rule, String message) {
        super(message);
        this.rule = rule;
    }

    public Rule rule() {
        return rule;
    }

    @Override
    public int httpStatus() {
        return 400;
    }
}
