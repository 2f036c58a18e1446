package io.retrysafe;

import io.retrysafe.internal.Require;

/**
 * An operation that calls out, written as named steps ({@link Phases}), with a name that finds it
 * again after a crash. Its input is saved with its first local step, so that the {@link PhaseCompleter}
 * can drive an operation nobody retried to its end without the request; its answer is stored and
 * replayed as any operation's.
 *
 * <pre>{@code
 * PhasedOperation<Checkout, Receipt, Connection> checkout = PhasedOperation.of("checkout", CHECKOUT, RECEIPT,
 *         (order, phases) -> {
 *             long hold = phases.local("reserve", LONG, c -> holds.reserve(c, order));
 *             String charge = phases.foreign("charge", StepCodec.utf8(),
 *                     key -> provider.charge(order.card(), order.amount(), key));
 *             return phases.local("book", RECEIPT_STEP, c -> ledger.book(c, hold, charge));
 *         })
 *         .withCompensation((order, phases) -> ...); // for example a refund, when the completer cannot go forward
 * }</pre>
 *
 * @param <I> the operation's input
 * @param <T> its answer
 * @param <C> what its local steps are given to reach their transaction
 */
public final class PhasedOperation<I, T, C> extends PhasedOperationBase<I, T, PhasedOperation.Body<I, T, C>> {
    /** Longest name of an operation or a step. */
    public static final int MAX_NAME_LENGTH = 200;

    private PhasedOperation(String name, StepCodec<I> input, ResponseCodec<T> answer, Body<I, T, C> forward,
            Body<I, T, C> compensation) {
        super(name, input, answer, forward, compensation);
    }

    /**
     * An operation named {@code name} (unique among the operations of one engine: the completer finds it by
     * it), whose input is saved with {@code input} and whose answer is stored with {@code answer}.
     */
    public static <I, T, C> PhasedOperation<I, T, C> of(String name, StepCodec<I> input, ResponseCodec<T> answer,
            Body<I, T, C> forward) {
        return new PhasedOperation<>(checkName(name, "name"), Require.notNull(input, "input"),
                Require.notNull(answer, "answer"), Require.notNull(forward, "forward"), null);
    }

    /**
     * This operation with a compensating end: what the {@link PhaseCompleter} runs, on the same saved steps,
     * when the forward path fails on an operation nobody retried (a refund, a reservation given back). Its
     * steps need names of their own; its answer is stored for the key, as the forward path's would be.
     */
    public PhasedOperation<I, T, C> withCompensation(Body<I, T, C> compensation) {
        Require.unset(compensation(), "compensation");
        return new PhasedOperation<>(name(), input(), answer(), forward(), Require.notNull(compensation, "compensation"));
    }

    static String checkName(String name, String what) {
        Require.notBlank(name, what);
        if (name.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException(what + " must be at most " + MAX_NAME_LENGTH + " characters, but was "
                    + name.length());
        }
        return name;
    }

    /** The operation's steps, given its input and the attempt's {@link Phases}. */
    @FunctionalInterface
    public interface Body<I, T, C> {
        T run(I input, Phases<C> phases) throws Exception;
    }
}
