package io.retrysafe;

import io.retrysafe.internal.Hex;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.PhaseJournal;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** One attempt's {@link Phases}: the saved state it resumed from, and the foreign values not saved yet. */
final class PhaseRun<C> implements Phases<C> {
    private final PhasedRetrySafe<C> phased;
    private final IdempotencyKey key;
    private final OwnerToken token;
    private final Attempt attempt;
    /** This attempt runs the operation's compensation: its local steps mark the saved state as compensating. */
    private final boolean compensation;
    private final Map<String, byte[]> unsaved = new LinkedHashMap<>();
    private final Set<String> used = new HashSet<>();
    private PhaseState state;

    private PhaseRun(PhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token, Attempt attempt,
            PhaseState state, boolean compensation) {
        this.phased = phased;
        this.key = key;
        this.token = token;
        this.attempt = attempt;
        this.state = state;
        this.compensation = compensation;
    }

    /**
     * The attempt that holds {@code key} with {@code token}: resumed from what an earlier attempt saved
     * (after a release or a takeover), or started with {@code input} for {@code operation}.
     *
     * @throws IllegalStateException if the key's saved state belongs to another operation
     */
    static <C> PhaseRun<C> begin(PhasedRetrySafe<C> phased, IdempotencyKey key, OwnerToken token, Attempt attempt,
            String operation, byte[] input) {
        PhaseState saved = saved(phased, key, token, attempt);
        if (saved != null && !saved.operation.equals(operation)) {
            throw new IllegalStateException("key " + key.digest() + " holds the saved steps of operation "
                    + saved.operation + ", not of " + operation);
        }
        return new PhaseRun<>(phased, key, token, attempt, saved != null ? saved : PhaseState.start(operation, input),
                false);
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

    /** The same attempt, from the same saved state, running the operation's compensation. */
    PhaseRun<C> forCompensation() {
        return new PhaseRun<>(phased, key, token, attempt, state, true);
    }

    /**
     * Whether a local step of the compensation committed, in this attempt or an earlier one: the operation must
     * then be resumed by its compensation, not go forward on a state that is partly undone.
     */
    boolean compensationBegun() {
        return state.compensating;
    }

    /**
     * Runs the operation from this attempt's state: its compensation once that began, forward otherwise.
     *
     * @throws IllegalStateException if the compensation began but the operation declares none now
     */
    <I, T> T resume(PhasedOperation<I, T, C> operation, I input) throws Exception {
        if (!compensationBegun()) {
            return operation.forward().run(input, this);
        }
        if (!operation.hasCompensation()) {
            throw new IllegalStateException("operation " + operation.name() + " of key " + key.digest() + " began its "
                    + "compensation, but declares none now");
        }
        return operation.compensation().run(input, forCompensation());
    }

    PhaseState state() {
        return state;
    }

    IdempotencyKey key() {
        return key;
    }

    OwnerToken token() {
        return token;
    }

    @Override
    public Attempt attempt() {
        return attempt;
    }

    @Override
    public String derivedKey(String step) {
        PhasedOperation.checkName(step, "step");
        // The key's hash is 64 hex digits, so the separator cannot be confused with part of it.
        return Hex.encode(Hex.sha256(key.hash() + '\u0000' + step));
    }

    @Override
    public Optional<String> recoveryPoint() {
        return Optional.ofNullable(state.recoveryPoint);
    }

    @Override
    public <V> V local(String step, StepCodec<V> codec, LocalStep<C, V> work) throws Exception {
        use(step);
        Require.notNull(codec, "codec");
        Require.notNull(work, "work");
        if (state.has(step)) {
            return codec.decode(state.value(step));
        }
        Object[] result = new Object[1];
        PhaseState[] next = new PhaseState[1];
        FencedWrite write = phased.journal().advance(key, token, phased.engine().policy().leaseTtl(), transaction -> {
            V value = work.run(transaction);
            Map<String, byte[]> saved = new LinkedHashMap<>(unsaved);
            saved.put(step, Require.notNull(codec.encode(value), "the encoded value of step " + step));
            next[0] = state.advancedTo(step, saved, compensation);
            byte[] encoded = next[0].encode();
            if (encoded.length > phased.maxSavedBytes()) {
                throw new PhaseStateTooLargeException("step " + step + " of operation " + state.operation + " would save "
                        + encoded.length + " bytes with the key, but at most " + phased.maxSavedBytes() + " may be saved");
            }
            result[0] = value;
            return encoded;
        });
        if (write instanceof FencedWrite.LeaseLost) {
            phased.engine().listener().onLeaseLost(key);
            throw new OutcomeUnknownException(phased.journal().name(), phased.engine().policy().retryAfter(),
                    "another attempt took key " + key.digest() + " over before step " + step + " of operation "
                            + state.operation + " committed; nothing of the step was kept, and this attempt stops", null);
        }
        state = next[0];
        unsaved.clear();
        @SuppressWarnings("unchecked")
        V value = (V) result[0];
        return value;
    }

    @Override
    public <V> V foreign(String step, StepCodec<V> codec, ForeignStep<V> call) throws Exception {
        use(step);
        Require.notNull(codec, "codec");
        Require.notNull(call, "call");
        if (state.has(step)) {
            return codec.decode(state.value(step));
        }
        if (state.recoveryPoint == null) {
            throw new IllegalStateException("foreign step " + step + " of operation " + state.operation + " has no "
                    + "recovery point before it: an operation's first step is local");
        }
        V value = call.call(derivedKey(step));
        unsaved.put(step, Require.notNull(codec.encode(value), "the encoded value of step " + step));
        return value;
    }

    private void use(String step) {
        PhasedOperation.checkName(step, "step");
        if (!used.add(step)) {
            throw new IllegalArgumentException("step " + step + " of operation " + state.operation + " ran twice in one "
                    + "attempt: each step needs a name of its own");
        }
    }
}
