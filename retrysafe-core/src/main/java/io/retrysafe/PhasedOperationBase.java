package io.retrysafe;

/**
 * What both faces of a phased operation ({@link PhasedOperation}, {@link AsyncPhasedOperation}) are: a name,
 * a codec for the saved input, one for the stored answer, and a forward body with an optional compensation.
 *
 * @param <B> the body's type, blocking or not
 */
abstract class PhasedOperationBase<I, T, B> {
    private final String name;
    private final StepCodec<I> input;
    private final ResponseCodec<T> answer;
    private final B forward;
    private final B compensation;

    PhasedOperationBase(String name, StepCodec<I> input, ResponseCodec<T> answer, B forward, B compensation) {
        this.name = name;
        this.input = input;
        this.answer = answer;
        this.forward = forward;
        this.compensation = compensation;
    }

    public String name() {
        return name;
    }

    public StepCodec<I> input() {
        return input;
    }

    public ResponseCodec<T> answer() {
        return answer;
    }

    B forward() {
        return forward;
    }

    /** Null when the operation declares none. */
    B compensation() {
        return compensation;
    }

    public boolean hasCompensation() {
        return compensation != null;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + name + (compensation == null ? "" : ", with compensation") + "]";
    }
}
