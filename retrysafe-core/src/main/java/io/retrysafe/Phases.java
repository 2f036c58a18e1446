package io.retrysafe;

/**
 * What a {@link PhasedOperation} is handed to write its work as named steps. A <em>local</em> step runs
 * in a transaction of the application's own database that also saves the step's value and moves the
 * key's recovery point to it, fenced by this attempt's owner token. A <em>foreign</em> step calls
 * another service with a key derived from the request's key and the step's name, the same on every
 * attempt, so that the other service deduplicates it; its value is saved by the next local step.
 *
 * <p>An attempt that resumes (a retry, a takeover after a crash, the {@link PhaseCompleter}) runs the
 * same code: a step saved before is not run again, and returns its saved value. Step names are
 * unique within an operation, and the steps are called in the same order on every attempt.
 *
 * @param <C> what a local step is given to reach its transaction: a JDBC {@code Connection}, or the
 *     transaction of the application's framework
 */
public interface Phases<C> {

    /** The attempt running the operation: 1 for the first, more after a release or a takeover. */
    Attempt attempt();

    /**
     * The key to pass to another service for {@code step}: 64 hex digits of SHA-256 over the key's
     * {@link IdempotencyKey#hash() hash} (scope and key), a 0x00 character and the step's name: the same on
     * every attempt and instance, different for every step and key, and no clue to the key itself.
     */
    String derivedKey(String step);

    /**
     * The last local step that committed, before this attempt or in it; empty before the first. A
     * step that is not run again because it is saved counts too.
     */
    java.util.Optional<String> recoveryPoint();

    /**
     * Runs {@code work} in a local transaction unless {@code step} was saved before, in which case
     * its saved value is returned and {@code work} does not run. The transaction also saves the value
     * ({@code codec}), the values of the foreign steps run since the last local step, and the new
     * recovery point; it commits only while this attempt holds the key.
     *
     * @throws OutcomeUnknownException if another attempt took the key over: nothing of the step was
     *     committed, and this attempt must stop
     * @throws PhaseStateTooLargeException if the saved values would pass the bound; nothing was committed
     */
    <V> V local(String step, StepCodec<V> codec, LocalStep<C, V> work) throws Exception;

    /**
     * Calls {@code call} with {@link #derivedKey(String) the step's derived key}, unless the step was
     * saved before, in which case its saved value is returned and {@code call} does not run. Needs a
     * recovery point: an operation's first step is local, so that whatever the foreign call changes is
     * found again by the attempt after a crash. The value is saved by the next local step; an attempt
     * that dies before it calls again, with the same derived key.
     */
    <V> V foreign(String step, StepCodec<V> codec, ForeignStep<V> call) throws Exception;

    /** The body of a local step, run in its transaction. */
    @FunctionalInterface
    interface LocalStep<C, V> {
        V run(C transaction) throws Exception;
    }

    /** The body of a foreign step, given its derived key. */
    @FunctionalInterface
    interface ForeignStep<V> {
        V call(String derivedKey) throws Exception;
    }
}
