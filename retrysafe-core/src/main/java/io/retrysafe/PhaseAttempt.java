package io.retrysafe;

import io.retrysafe.internal.Hex;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RetrySafeListener;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What one attempt of a phased operation knows, whichever face runs it ({@link PhaseRun} blocking,
 * {@link AsyncPhaseRun} non-blocking): the saved state it resumed from, the foreign values not saved yet,
 * the step names used, and the rules on them. Only the journal calls differ between the two.
 */
abstract class PhaseAttempt {
    private final IdempotencyKey key;
    private final OwnerToken token;
    private final Attempt attempt;
    private final int maxSavedBytes;
    /** This attempt runs the operation's compensation: its local steps mark the saved state as compensating. */
    private final boolean compensation;
    private final Map<String, byte[]> unsaved = new LinkedHashMap<>();
    private final Set<String> used = new HashSet<>();
    private PhaseState state;

    PhaseAttempt(IdempotencyKey key, OwnerToken token, Attempt attempt, int maxSavedBytes, PhaseState state,
            boolean compensation) {
        this.compensation = compensation;
        this.key = key;
        this.token = token;
        this.attempt = attempt;
        this.maxSavedBytes = maxSavedBytes;
        this.state = state;
    }

    /**
     * Where an attempt of {@code operation} starts: from {@code saved} (null when there is none), or from
     * {@code input}.
     *
     * @throws IllegalStateException if {@code saved} belongs to another operation
     */
    static PhaseState startingPoint(IdempotencyKey key, PhaseState saved, String operation, byte[] input) {
        if (saved == null) {
            return PhaseState.start(operation, input);
        }
        if (!saved.operation.equals(operation)) {
            throw new IllegalStateException("key " + key.digest() + " holds the saved steps of operation "
                    + saved.operation + ", not of " + operation);
        }
        return saved;
    }

    /** {@link Phases#derivedKey}: the one rule for both faces, so that a step calls out with the same key on either. */
    static String derivedKey(IdempotencyKey key, String step) {
        PhasedOperation.checkName(step, "step");
        // The key's hash is 64 hex digits, so the separator cannot be confused with part of it.
        return Hex.encode(Hex.sha256(key.hash() + '\u0000' + step));
    }

    public Attempt attempt() {
        return attempt;
    }

    public String derivedKey(String step) {
        return derivedKey(key, step);
    }

    public Optional<String> recoveryPoint() {
        return Optional.ofNullable(state.recoveryPoint);
    }

    PhaseState state() {
        return state;
    }

    /**
     * Whether a local step of the compensation committed, in this attempt or an earlier one: the operation must
     * then be resumed by its compensation, not go forward on a state that is partly undone.
     */
    final boolean compensationBegun() {
        return state.compensating;
    }

    /**
     * @throws IllegalStateException if the compensation began but {@code operation} declares none now
     */
    final void mayCompensate(String operation, boolean declared) {
        if (!declared) {
            throw new IllegalStateException("operation " + operation + " of key " + key.digest() + " began its "
                    + "compensation, but declares none now");
        }
    }

    IdempotencyKey key() {
        return key;
    }

    OwnerToken token() {
        return token;
    }

    /**
     * Takes {@code step}'s name for this attempt; its saved value if an earlier attempt saved it (the step
     * does not run then), else null.
     */
    final byte[] take(String step, StepCodec<?> codec, Object work) {
        PhasedOperation.checkName(step, "step");
        if (!used.add(step)) {
            throw new IllegalArgumentException("step " + step + " of operation " + state.operation + " ran twice in one "
                    + "attempt: each step needs a name of its own");
        }
        Require.notNull(codec, "codec");
        Require.notNull(work, "work");
        return state.has(step) ? state.value(step) : null;
    }

    /** A foreign step may call out only after a local step: what it changes must be found again after a crash. */
    final void mayCallOut(String step) {
        if (state.recoveryPoint == null) {
            throw new IllegalStateException("foreign step " + step + " of operation " + state.operation + " has no "
                    + "recovery point before it: an operation's first step is local");
        }
    }

    /** A foreign step's value, saved by the next local step. */
    final <V> void calledOut(String step, StepCodec<V> codec, V value) {
        unsaved.put(step, Require.notNull(codec.encode(value), "the encoded value of step " + step));
    }

    /**
     * The state local step {@code step} saves with {@code value}: the foreign values not saved yet, then its own.
     *
     * @throws PhaseStateTooLargeException past the bound, before anything commits
     */
    final <V> Saving advancedBy(String step, StepCodec<V> codec, V value) {
        Map<String, byte[]> saved = new LinkedHashMap<>(unsaved);
        saved.put(step, Require.notNull(codec.encode(value), "the encoded value of step " + step));
        PhaseState next = state.advancedTo(step, saved, compensation);
        byte[] bytes = next.encode();
        if (bytes.length > maxSavedBytes) {
            throw new PhaseStateTooLargeException("step " + step + " of operation " + state.operation + " would save "
                    + bytes.length + " bytes with the key, but at most " + maxSavedBytes + " may be saved");
        }
        return new Saving(next, bytes);
    }

    /** The local step that saved {@code saving} committed. */
    final void committed(Saving saving) {
        state = saving.state();
        unsaved.clear();
    }

    /** A local step's next state, and its bytes as the journal saves them. */
    record Saving(PhaseState state, byte[] bytes) {
    }

    /** The local step's fenced write found the key taken over: this attempt stops, not knowing more. */
    final OutcomeUnknownException leaseLost(String step, String journal, RetrySafeListener listener,
            Duration retryAfter) {
        listener.onLeaseLost(key);
        return new OutcomeUnknownException(journal, retryAfter, "another attempt took key " + key.digest()
                + " over before step " + step + " of operation " + state.operation + " committed; nothing of the step "
                + "was kept, and this attempt stops", null);
    }
}
