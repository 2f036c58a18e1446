package io.retrysafe;

import io.retrysafe.internal.Require;
import java.time.Duration;

/**
 * How one kind of operation is protected: how long its records are kept, how long an attempt's
 * lease lasts, how long a duplicate waits for the outcome of an attempt in flight, and which
 * results are stored. Immutable; {@link #custom()} starts from the defaults, {@link #from} from
 * another policy.
 *
 * <pre>{@code
 * OperationPolicy payments = OperationPolicy.custom().retention(Duration.ofDays(7)).build();
 * retrySafe.with(payments).execute(key, fingerprint, codec, op);
 * }</pre>
 */
public final class OperationPolicy {
    public static final Duration DEFAULT_RETENTION = Duration.ofHours(24);
    public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(30);
    public static final Duration DEFAULT_WAIT_FOR_RESULT = Duration.ZERO;
    public static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(1);

    private static final OperationPolicy DEFAULTS = custom().build();

    private final Duration retention;
    private final Duration leaseTtl;
    private final Duration waitForResult;
    private final Duration retryAfter;
    private final OutcomePolicy outcomePolicy;
    private final StoredResponseProtection protection;

    private OperationPolicy(Builder b) {
        this.retention = b.retention;
        this.leaseTtl = b.leaseTtl;
        this.waitForResult = b.waitForResult;
        this.retryAfter = b.retryAfter;
        this.outcomePolicy = b.outcomePolicy;
        this.protection = b.protection;
    }

    public static OperationPolicy ofDefaults() {
        return DEFAULTS;
    }

    public static Builder custom() {
        return new Builder();
    }

    public static Builder from(OperationPolicy base) {
        Builder b = new Builder();
        b.retention = base.retention;
        b.leaseTtl = base.leaseTtl;
        b.waitForResult = base.waitForResult;
        b.retryAfter = base.retryAfter;
        b.outcomePolicy = base.outcomePolicy;
        b.protection = base.protection;
        return b;
    }

    /** How long a record protects its key, counted from the claim and again from the completion. */
    public Duration retention() {
        return retention;
    }

    /** How long an attempt holds its key before another attempt may take it over (standalone mode). */
    public Duration leaseTtl() {
        return leaseTtl;
    }

    /** How long a duplicate waits for the attempt in flight to finish before it is refused as in progress. */
    public Duration waitForResult() {
        return waitForResult;
    }

    /** The {@code Retry-After} suggested when refusing a duplicate in flight or a store failure. */
    public Duration retryAfter() {
        return retryAfter;
    }

    public OutcomePolicy outcomePolicy() {
        return outcomePolicy;
    }

    /** What is done to a response before it is stored (and cached by a fast path), and undone on replay. */
    public StoredResponseProtection protection() {
        return protection;
    }

    @Override
    public String toString() {
        return "OperationPolicy[retention=" + retention + ", leaseTtl=" + leaseTtl + ", waitForResult=" + waitForResult
                + ", retryAfter=" + retryAfter + ", protection=" + protection + "]";
    }

    public static final class Builder {
        private Duration retention = DEFAULT_RETENTION;
        private Duration leaseTtl = DEFAULT_LEASE_TTL;
        private Duration waitForResult = DEFAULT_WAIT_FOR_RESULT;
        private Duration retryAfter = DEFAULT_RETRY_AFTER;
        private OutcomePolicy outcomePolicy = OutcomePolicy.DEFAULT;
        private StoredResponseProtection protection = StoredResponseProtection.NONE;

        private Builder() {
        }

        public Builder retention(Duration retention) {
            this.retention = Require.positive(retention, "retention");
            return this;
        }

        public Builder leaseTtl(Duration leaseTtl) {
            this.leaseTtl = Require.positive(leaseTtl, "leaseTtl");
            return this;
        }

        public Builder waitForResult(Duration waitForResult) {
            this.waitForResult = Require.notNegative(waitForResult, "waitForResult");
            return this;
        }

        public Builder retryAfter(Duration retryAfter) {
            this.retryAfter = Require.positive(retryAfter, "retryAfter");
            return this;
        }

        public Builder outcomePolicy(OutcomePolicy outcomePolicy) {
            this.outcomePolicy = Require.notNull(outcomePolicy, "outcomePolicy");
            return this;
        }

        /** Encryption or redaction of stored responses; {@link StoredResponseProtection#NONE} by default. */
        public Builder protection(StoredResponseProtection protection) {
            this.protection = Require.notNull(protection, "protection");
            return this;
        }

        public OperationPolicy build() {
            if (leaseTtl.compareTo(retention) > 0) {
                throw new IllegalStateException("leaseTtl must not exceed retention, but was leaseTtl=" + leaseTtl
                        + ", retention=" + retention);
            }
            if (leaseTtl.toMillis() < 1 || retention.toMillis() < 1) {
                throw new IllegalStateException("leaseTtl and retention must be at least 1 ms (stores count in "
                        + "milliseconds), but was leaseTtl=" + leaseTtl + ", retention=" + retention);
            }
            return new OperationPolicy(this);
        }
    }
}
