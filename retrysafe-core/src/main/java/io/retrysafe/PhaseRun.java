package io.retrysafe;

import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;

/** One attempt's {@link Phases}: the blocking face, whose steps run on the caller's thread. */
final class PhaseRun<C> extends PhaseAttempt implements Phases<C> {
    private final PhasedRetrySafe<C> phased;

    private PhaseRun(PhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token, Attempt attempt,
            PhaseState state, boolean compensation) {
        super(key, token, attempt, phased.maxSavedBytes(), state, compensation);
        this.phased = phased;
    }

    /**
     * The attempt that holds {@code key} with {@code token}: resumed from what an earlier attempt saved
     * (after a release or a takeover), or started with {@code input} for {@code operation}.
     *
     * @throws IllegalStateException if the key's saved state belongs to another operation
     */
    static <C> PhaseRun<C> begin(PhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token, Attempt attempt,
            String operation, byte[] input) {
        return new PhaseRun<>(phased, key, token, attempt,
                startingPoint(key, saved(phased, key, token, attempt), operation, input), false);
    }

    /** The saved state of a key this attempt took over, or null when there is none (the first attempt has none). */
    static <C> PhaseState saved(PhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token, Attempt attempt) {
        if (attempt.isFirst()) {
            return null;
        }
        return phased.journal().read(key, token).map(PhaseState::decode).orElse(null);
    }

    /** Resumes the attempt that holds {@code key} from {@code saved} (the completer, which read it itself). */
    static <C> PhaseRun<C> resume(PhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token, Attempt attempt,
            PhaseState saved) {
        return new PhaseRun<>(phased, key, token, attempt, saved, false);
    }

    /** The same attempt, from the state saved by now, running the operation's compensation. */
    PhaseRun<C> forCompensation() {
        return new PhaseRun<>(phased, key(), token(), attempt(), state(), true);
    }

    /** Runs the operation from this attempt's state: its compensation once that began, forward otherwise. */
    <I, T> T resume(PhasedOperation<I, T, C> operation, I input) throws Exception {
        if (!compensationBegun()) {
            return operation.forward().run(input, this);
        }
        mayCompensate(operation.name(), operation.hasCompensation());
        return operation.compensation().run(input, forCompensation());
    }

    @Override
    public <V> V local(String step, StepCodec<V> codec, LocalStep<C, V> work) throws Exception {
        byte[] saved = take(step, codec, work);
        if (saved != null) {
            return codec.decode(saved);
        }
        Object[] result = new Object[1];
        Saving[] next = new Saving[1];
        FencedWrite write = phased.journal().advance(key(), token(), phased.engine().policy().leaseTtl(), transaction -> {
            V value = work.run(transaction);
            next[0] = advancedBy(step, codec, value);
            result[0] = value;
            return next[0].bytes();
        });
        if (write instanceof FencedWrite.LeaseLost) {
            throw leaseLost(step, phased.journal().name(), phased.engine().listener(), phased.engine().policy().retryAfter());
        }
        committed(next[0]);
        @SuppressWarnings("unchecked")
        V value = (V) result[0];
        return value;
    }

    @Override
    public <V> V foreign(String step, StepCodec<V> codec, ForeignStep<V> call) throws Exception {
        byte[] saved = take(step, codec, call);
        if (saved != null) {
            return codec.decode(saved);
        }
        mayCallOut(step);
        V value = call.call(derivedKey(step));
        calledOut(step, codec, value);
        return value;
    }
}
