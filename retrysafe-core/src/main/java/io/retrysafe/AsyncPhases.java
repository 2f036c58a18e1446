package io.retrysafe;

import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * {@link Phases} for a non-blocking application: the same steps with the same rules (the first step local,
 * a name of its own for each step, saved steps handed back without running, a foreign value saved by the
 * next local step, the same bound on what is saved), each answered by a stage. A step that breaks a rule
 * answers a failed stage; so does a local step whose key was taken over ({@link OutcomeUnknownException}).
 * Call the next step once the stage before it completed: steps run one at a time, in order.
 *
 * @param <C> what a local step is given to reach its transaction: an R2DBC {@code Connection}
 */
public interface AsyncPhases<C> {

    /** {@link Phases#attempt()}. */
    Attempt attempt();

    /** {@link Phases#derivedKey}: the same key as a blocking attempt's for the same step. */
    String derivedKey(String step);

    /** {@link Phases#recoveryPoint()}. */
    Optional<String> recoveryPoint();

    /**
     * {@link Phases#local}: runs {@code work} in a transaction of its own unless {@code step} was saved,
     * and saves its value with the recovery point in that transaction once {@code work}'s stage completes.
     */
    <V> CompletionStage<V> local(String step, StepCodec<V> codec, LocalStep<C, V> work);

    /** {@link Phases#foreign}: calls out with the step's derived key unless {@code step} was saved. */
    <V> CompletionStage<V> foreign(String step, StepCodec<V> codec, ForeignStep<V> call);

    /** The body of a local step: its writes, on {@code transaction}, done when its stage completes. */
    @FunctionalInterface
    interface LocalStep<C, V> {
        CompletionStage<V> run(C transaction) throws Exception;
    }

    /** The body of a foreign step, given its derived key. */
    @FunctionalInterface
    interface ForeignStep<V> {
        CompletionStage<V> call(String derivedKey) throws Exception;
    }
}
