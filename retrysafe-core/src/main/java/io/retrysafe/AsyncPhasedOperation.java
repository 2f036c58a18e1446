package io.retrysafe;

import io.retrysafe.internal.Require;
import java.util.concurrent.CompletionStage;

/**
 * {@link PhasedOperation} for a non-blocking application: the same name, saved input and stored answer,
 * with a body that answers a stage and writes its steps with {@link AsyncPhases}.
 *
 * <pre>{@code
 * AsyncPhasedOperation<Checkout, Receipt, Connection> checkout = AsyncPhasedOperation.of("checkout", CHECKOUT,
 *         RECEIPT, (order, phases) -> phases.local("reserve", LONG, c -> holds.reserve(c, order))
 *                 .thenCompose(hold -> phases.foreign("charge", StepCodec.utf8(),
 *                                 key -> provider.charge(order, key))
 *                         .thenCompose(charge -> phases.local("book", RECEIPT_STEP, c -> ledger.book(c, hold, charge)))));
 * }</pre>
 *
 * @param <I> the operation's input
 * @param <T> its answer
 * @param <C> what its local steps are given to reach their transaction
 */
public final class AsyncPhasedOperation<I, T, C> extends PhasedOperationBase<I, T, AsyncPhasedOperation.Body<I, T, C>> {
    private AsyncPhasedOperation(String name, StepCodec<I> input, ResponseCodec<T> answer, Body<I, T, C> forward,
            Body<I, T, C> compensation) {
        super(name, input, answer, forward, compensation);
    }

    /** {@link PhasedOperation#of}: {@code name} is unique among the operations of one engine. */
    public static <I, T, C> AsyncPhasedOperation<I, T, C> of(String name, StepCodec<I> input, ResponseCodec<T> answer,
            Body<I, T, C> forward) {
        return new AsyncPhasedOperation<>(PhasedOperation.checkName(name, "name"), Require.notNull(input, "input"),
                Require.notNull(answer, "answer"), Require.notNull(forward, "forward"), null);
    }

    /** {@link PhasedOperation#withCompensation}: what the completer runs when the forward path fails. */
    public AsyncPhasedOperation<I, T, C> withCompensation(Body<I, T, C> compensation) {
        Require.unset(compensation(), "compensation");
        return new AsyncPhasedOperation<>(name(), input(), answer(), forward(), Require.notNull(compensation, "compensation"));
    }

    /** The operation's steps, given its input and the attempt's {@link AsyncPhases}; done when its stage completes. */
    @FunctionalInterface
    public interface Body<I, T, C> {
        CompletionStage<T> run(I input, AsyncPhases<C> phases) throws Exception;
    }
}
