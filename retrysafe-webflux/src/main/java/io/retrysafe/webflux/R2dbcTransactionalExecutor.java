package io.retrysafe.webflux;

import io.r2dbc.spi.ConnectionFactory;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import io.retrysafe.r2dbc.TransactionalR2dbcRetrySafe;
import java.lang.System.Logger.Level;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.r2dbc.connection.ConnectionFactoryUtils;
import org.springframework.r2dbc.connection.R2dbcTransactionManager;
import org.springframework.transaction.ReactiveTransactionManager;
import org.springframework.transaction.TransactionSystemException;
import org.springframework.transaction.reactive.TransactionalOperator;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.web.server.ServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * Transactional mode for the WebFlux filter, on Spring's reactive transaction manager: the filter
 * begins a transaction ({@link TransactionalOperator}), the claim of the key is its first statement,
 * the handler runs in the transaction's Reactor context so that its writes through
 * {@code DatabaseClient}, R2DBC repositories, {@code @Transactional} methods and
 * {@code TransactionalOperator}s on the same {@link ConnectionFactory} join it, and the response is
 * written into it before it commits. The response reaches the client only after that commit; a replay,
 * a refusal, the handler's failure, a released result (a {@code 5xx}) and a cancelled exchange roll
 * all of it back.
 *
 * <pre>{@code
 * AsyncRetrySafe engine = AsyncRetrySafe.builder(R2dbcIdempotencyStore.builder(connectionFactory).build()).build();
 * WebFilter filter = new RetrySafeWebFilter(config,
 *         new R2dbcTransactionalExecutor(TransactionalR2dbcRetrySafe.of(engine), connectionFactory, transactionManager),
 *         engine.listener());
 * }</pre>
 *
 * <p>A cancelled exchange cancels the handler; the transaction then ends as after a failed handler,
 * rolled back once the engine is done with its connection, so that no statement of this request
 * reaches the connection after it went back to the pool.
 */
public final class R2dbcTransactionalExecutor implements ReactiveIdempotentExecutor {
    private static final System.Logger LOG = System.getLogger(R2dbcTransactionalExecutor.class.getName());

    private final TransactionalR2dbcRetrySafe transactional;
    private final ConnectionFactory connectionFactory;
    private final ReactiveTransactionManager transactionManager;

    /**
     * @param transactional transactional mode on an engine whose store is on {@code connectionFactory}
     * @param connectionFactory the one the handler's writes use, and that {@code transactionManager} manages
     */
    public R2dbcTransactionalExecutor(TransactionalR2dbcRetrySafe transactional, ConnectionFactory connectionFactory,
            ReactiveTransactionManager transactionManager) {
        this.transactional = Require.notNull(transactional, "transactional");
        this.connectionFactory = Require.notNull(connectionFactory, "connectionFactory");
        this.transactionManager = Require.notNull(transactionManager, "transactionManager");
        if (transactionManager instanceof R2dbcTransactionManager r2dbc
                && r2dbc.getConnectionFactory() != connectionFactory) {
            throw new IllegalArgumentException("the transaction manager must manage the connection factory the "
                    + "handler's writes use, or they would commit apart from the key, but it managed "
                    + r2dbc.getConnectionFactory());
        }
    }

    @Override
    public Mono<Outcome<StoredResponse>> execute(ServerWebExchange exchange, IdempotencyKey key,
            Fingerprint fingerprint, OperationPolicy policy, Mono<StoredResponse> handler) {
        TransactionalR2dbcRetrySafe tx = policy == null ? transactional : transactional.with(policy);
        DefaultTransactionDefinition definition = new DefaultTransactionDefinition();
        definition.setName("retrysafe key " + key.digest());
        AtomicBoolean begun = new AtomicBoolean();
        AtomicReference<TransactionalR2dbcRetrySafe.Joined<StoredResponse>> decided = new AtomicReference<>();
        Mono<Outcome<StoredResponse>> inTransaction = TransactionalOperator.create(transactionManager, definition)
                .execute(status -> {
                    begun.set(true);
                    return ConnectionFactoryUtils.getConnection(connectionFactory)
                            .flatMap(connection -> Mono.deferContextual(context -> Mono.fromCompletionStage(() ->
                                    tx.join(connection, key, fingerprint, ResponseCodec.identity(),
                                            attempt -> handler.contextWrite(context).toFuture()))))
                            .map(joined -> {
                                decided.set(joined);
                                if (!joined.commit()) {
                                    // Replays and refusals wrote nothing; a released result's writes must not commit.
                                    status.setRollbackOnly();
                                }
                                return joined.outcome();
                            });
                })
                .singleOrEmpty()
                .onErrorResume(failure -> ended(tx, key, begun.get(), decided.get(), failure));
        // Not cancelled with the exchange: the cancelled handler fails the attempt, and the transaction
        // ends on the error path, after the engine's last statement on its connection.
        return Mono.deferContextual(context -> Mono.fromFuture(inTransaction.contextWrite(context).toFuture(), true));
    }

    /** What a failure of the transaction answers: which step failed decides. */
    private static Mono<Outcome<StoredResponse>> ended(TransactionalR2dbcRetrySafe tx, IdempotencyKey key,
            boolean begun, TransactionalR2dbcRetrySafe.Joined<StoredResponse> decided, Throwable failure) {
        String store = tx.engine().store().name();
        if (!begun) {
            // No connection, no transaction: fail closed before the handler runs, as the engine does.
            Outcome<StoredResponse> unavailable = new Outcome.StoreUnavailable<>(new StoreUnavailableException(store,
                    tx.engine().policy().retryAfter(), "the transaction of key " + key.digest()
                    + " could not begin: " + failure.getMessage(), failure));
            tx.engine().listener().onOutcome(key, unavailable);
            return Mono.just(unavailable);
        }
        if (decided == null) {
            // The handler's failure (or the engine's), whose rollback failing must not replace it.
            Throwable cause = failure instanceof TransactionSystemException e && e.getApplicationException() != null
                    ? e.getApplicationException() : failure;
            if (cause != failure) {
                LOG.log(Level.WARNING, () -> "[" + tx.engine().name() + "] rollback of the transaction of key "
                        + key.digest() + " failed (the database discards it with its connection): " + failure);
            }
            return Mono.error(cause);
        }
        if (!decided.commit()) {
            // Rolled back for a replay, a refusal or a released result: a failed rollback changes nothing of it.
            LOG.log(Level.WARNING, () -> "[" + tx.engine().name() + "] rollback of the transaction of key "
                    + key.digest() + " failed (the database discards it with its connection): " + failure);
            return Mono.just(decided.outcome());
        }
        // The commit failed: the handler's success was rolled back and must not be reported.
        RuntimeException cause = failure instanceof RuntimeException e ? e : new IllegalStateException(failure);
        tx.engine().listener().onStoreError(store, "commit", cause);
        return Mono.error(new StoreUnavailableException(store, tx.engine().policy().retryAfter(),
                "the transaction of key " + key.digest() + " did not commit: " + failure.getMessage(), failure));
    }
}
