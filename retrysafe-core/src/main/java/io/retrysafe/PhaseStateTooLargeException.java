package io.retrysafe;

/**
 * A local step's saved values, with the operation's input and the values saved before, would pass
 * {@link PhasedRetrySafe#maxSavedBytes()}. Nothing of the step was committed; the attempt fails, and the
 * key is released. Saved values are meant for ids and amounts, not documents: keep those in the
 * application's own tables, written by the step, and save their id.
 */
public final class PhaseStateTooLargeException extends RetrySafeException {
    private static final long serialVersionUID = 1L;

    public PhaseStateTooLargeException(String message) {
        super(message);
    }

    /** A defect of the operation, not of the request: answered as a server error. */
    @Override
    public int httpStatus() {
        return 500;
    }
}
