package io.retrysafe.jaxrs;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.Operation;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.internal.Engines;
import io.retrysafe.internal.InFlightKeys;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * How a request runs under its key. Jakarta REST has no filter around the resource, only one before it and one
 * after: the key is claimed in the first, and the claim is completed with the response in the second. In between
 * the engine waits on the resource's response as on an asynchronous handler's.
 */
abstract sealed class Mode permits Mode.Standalone, Mode.Transactional {
    private static final System.Logger LOG = System.getLogger(Mode.class.getName());

    abstract RetrySafe engine();

    /** How long a duplicate of a request in flight on this instance waits for it, in memory, before 409. */
    abstract Duration duplicateWait(OperationPolicy policy);

    /** Claims the key and, if claimed, calls {@code operation}, whose stage completes with the resource's response. */
    abstract CompletionStage<Outcome<StoredResponse>> start(IdempotencyKey key, Fingerprint fingerprint,
            OperationPolicy policy, Operation<CompletableFuture<StoredResponse>> operation);

    /**
     * Claims the key before the resource runs. A duplicate of a request in flight on this instance waits for it
     * here without a connection, as the servlet filter's do.
     *
     * @throws RuntimeException the engine's failure that is no problem of the shared table (none expected)
     */
    final Claim claim(IdempotencyKey key, Fingerprint fingerprint, OperationPolicy policy) {
        InFlightKeys.Admission admission = Engines.inFlight(engine()).admit(key, fingerprint, duplicateWait(policy));
        if (admission instanceof InFlightKeys.Admission.Busy) {
            Outcome<StoredResponse> busy = new Outcome.InProgress<>(
                    (policy == null ? engine() : engine().with(policy)).policy().retryAfter());
            engine().listener().onOutcome(key, busy);
            return new Claim.Answered(HttpSemantics.refusal(busy));
        }
        CompletableFuture<StoredResponse> response = new CompletableFuture<>();
        AtomicBoolean started = new AtomicBoolean();
        CompletableFuture<Outcome<StoredResponse>> outcome;
        try {
            outcome = start(key, fingerprint, policy, attempt -> {
                started.set(true);
                return response;
            }).toCompletableFuture();
        } catch (RuntimeException e) {
            admission.close();
            return answered(e);
        }
        outcome.whenComplete((done, failure) -> {
            if (admission instanceof InFlightKeys.Admission.Entered entered && isAnswered(done)) {
                entered.answered(); // its duplicates go on to the store together, which replays
            }
            admission.close();
        });
        if (started.get()) {
            return new Claim.Running(response, outcome);
        }
        // Not claimed: the engine answered at once (a replay, a refusal, the store down).
        try {
            return new Claim.Answered(HttpSemantics.refusal(outcome.join()));
        } catch (CompletionException e) {
            return answered(e.getCause());
        }
    }

    private static boolean isAnswered(Outcome<StoredResponse> done) {
        return done instanceof Outcome.Replayed<StoredResponse> || done instanceof Outcome.Executed<StoredResponse> e
                && e.completion() == Outcome.Completion.STORED;
    }

    /** A failure before the resource ran: a stored response that cannot be opened, the store down. */
    private static Claim answered(Throwable failure) {
        HttpAnswer answer = HttpSemantics.failure(failure);
        if (answer == null) {
            throw failure instanceof RuntimeException e ? e : new IllegalStateException(failure);
        }
        return new Claim.Answered(answer);
    }

    /** Standalone mode: the claim commits before the resource runs, the response after. */
    static final class Standalone extends Mode {
        private final RetrySafe engine;

        Standalone(RetrySafe engine) {
            this.engine = engine;
        }

        @Override
        RetrySafe engine() {
            return engine;
        }

        @Override
        Duration duplicateWait(OperationPolicy policy) {
            return (policy == null ? engine : engine.with(policy)).policy().waitForResult();
        }

        @Override
        CompletionStage<Outcome<StoredResponse>> start(IdempotencyKey key, Fingerprint fingerprint,
                OperationPolicy policy, Operation<CompletableFuture<StoredResponse>> operation) {
            return (policy == null ? engine : engine.with(policy)).executeAsync(key, fingerprint,
                    ResponseCodec.identity(), operation);
        }
    }

    /**
     * Transactional mode: the claim, the resource's writes on {@link #CONNECTION} and the response commit in one
     * transaction, after the resource returned and before its response is sent.
     */
    static final class Transactional extends Mode {
        /** The transaction's connection, on the thread that runs the resource. */
        static final ThreadLocal<Connection> CONNECTION = new ThreadLocal<>();

        private final TransactionalRetrySafe transactional;

        Transactional(TransactionalRetrySafe transactional) {
            this.transactional = transactional;
        }

        @Override
        RetrySafe engine() {
            return transactional.engine();
        }

        @Override
        Duration duplicateWait(OperationPolicy policy) {
            return transactional.lockTimeout();
        }

        @Override
        CompletionStage<Outcome<StoredResponse>> start(IdempotencyKey key, Fingerprint fingerprint,
                OperationPolicy policy, Operation<CompletableFuture<StoredResponse>> operation) {
            TransactionalRetrySafe tx = policy == null ? transactional : transactional.with(policy);
            Connection c;
            try {
                c = tx.dataSource().getConnection();
            } catch (SQLException e) {
                return CompletableFuture.completedFuture(new Outcome.StoreUnavailable<>(new StoreUnavailableException(
                        tx.engine().store().name(), tx.engine().policy().retryAfter(),
                        "could not get a connection: " + e.getMessage(), e)));
            }
            CompletionStage<Outcome<StoredResponse>> outcome;
            try {
                outcome = tx.executeAsync(c, key, fingerprint, ResponseCodec.identity(), attempt -> {
                    CONNECTION.set(c);
                    return operation.run(attempt);
                });
            } catch (RuntimeException e) {
                close(c);
                throw e;
            }
            return outcome.whenComplete((done, failure) -> {
                CONNECTION.remove();
                close(c);
            });
        }

        private static void close(Connection c) {
            try {
                c.close();
            } catch (SQLException e) {
                // The outcome is already decided (and committed, or not): a failing close changes nothing of it.
                LOG.log(System.Logger.Level.WARNING, "closing the connection failed: " + e);
            }
        }
    }
}
