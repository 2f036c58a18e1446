package io.retrysafe.spring;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationFailedException;
import io.retrysafe.Outcome;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.UnauthenticatedException;
import io.retrysafe.internal.CanonicalJson;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.sql.Connection;
import java.sql.Savepoint;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.NoTransactionException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.interceptor.TransactionAspectSupport;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.ClassUtils;

/**
 * Applies {@link Idempotent}: resolves whose key it is, evaluates the key, fingerprints the arguments,
 * and runs the method through the engine with the method's own policy.
 */
final class IdempotentInterceptor implements MethodInterceptor {
    /** Marks a stored outcome that is a declared exception; its value names the exception's class. */
    static final String EXCEPTION_HEADER = "retrysafe-exception";
    /** The observations' {@code retrysafe.kind} of these calls. */
    static final String KIND = "method";
    /** spring-orm present: a transaction may be a JPA one, whose entity changes a savepoint alone does not cover. */
    private static final boolean JPA = ClassUtils.isPresent("org.springframework.orm.jpa.EntityManagerHolder",
            IdempotentInterceptor.class.getClassLoader());

    private final RetrySafe engine;
    private final TransactionalRetrySafe transactional;
    private final PlatformTransactionManager transactionManager;
    private final DataSource dataSource;
    private final KeyRules keyRules;
    private final MethodJson json;
    private final Supplier<String> caller;
    private final RetrySafeObservations observations;
    private final PhasedRetrySafe<Connection> phased;
    private final PhasedMethods phasedMethods;
    private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
    private final Map<Method, Bound> methods = new ConcurrentHashMap<>();

    /** A method's settings with what runs it: the engine on its policy, and the codec of its return type. */
    private record Bound(IdempotentMethod settings, RetrySafe engine, TransactionalRetrySafe transactional,
            ResponseCodec<Object> codec, PhasedRetrySafe<Connection> phased) {
    }

    /** What a call ended with when it threw a declared exception: stored, and thrown again. */
    record Thrown(Throwable exception) {
    }

    /**
     * @param transactional null with a non-JDBC store, and then so are {@code transactionManager} and {@code dataSource}
     * @param caller the current caller's scope, null when there is none
     * @param phased the phased engine, null without a JDBC store (a method that takes {@code Phases} is refused then)
     */
    IdempotentInterceptor(RetrySafe engine, TransactionalRetrySafe transactional,
            PlatformTransactionManager transactionManager, DataSource dataSource, KeyRules keyRules, MethodJson json,
            Supplier<String> caller, RetrySafeObservations observations, PhasedRetrySafe<Connection> phased,
            PhasedMethods phasedMethods) {
        this.phased = phased;
        this.phasedMethods = phasedMethods;
        this.engine = engine;
        this.transactional = transactional;
        this.transactionManager = transactionManager;
        this.dataSource = dataSource;
        this.keyRules = keyRules;
        this.json = json;
        this.caller = caller;
        this.observations = observations;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Method method = AopUtils.getMostSpecificMethod(invocation.getMethod(),
                invocation.getThis() == null ? invocation.getMethod().getDeclaringClass() : invocation.getThis().getClass());
        Bound bound = methods.computeIfAbsent(method, m -> bind(m, invocation.getMethod()));
        IdempotentMethod settings = bound.settings();
        try (RetrySafeObservations.Observed observed = observations.start(KIND, settings.operation(), true)) {
            try {
                Object result = invoke(invocation, method, bound, observed);
                if (result instanceof Thrown thrown) {
                    throw thrown.exception();
                }
                return result;
            } catch (Throwable t) {
                observed.error(t);
                throw t;
            }
        }
    }

    /** The call's result: the method's value, or a declared exception it threw ({@link Thrown}). */
    private Object invoke(MethodInvocation invocation, Method method, Bound bound, RetrySafeObservations.Observed observed)
            throws Throwable {
        IdempotentMethod settings = bound.settings();
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(invocation.getThis(), method,
                invocation.getArguments(), names);
        Object keyValue = settings.key().getValue(context);
        if (keyValue == null) {
            throw new IllegalArgumentException("@Idempotent key " + settings.key().getExpressionString() + " of "
                    + settings + " was null");
        }
        String scope;
        try {
            scope = scope(settings);
        } catch (UnauthenticatedException e) {
            observed.outcome(RetrySafeObservations.UNAUTHENTICATED);
            throw e;
        }
        IdempotencyKey key;
        try {
            key = keyRules.key(scope, keyValue.toString());
        } catch (InvalidKeyException e) {
            observed.outcome(RetrySafeObservations.INVALID_KEY);
            throw e;
        }
        observed.key(key);
        Object covered = settings.fingerprint() == null ? invocation.getArguments()
                : settings.fingerprint().getValue(context);
        Fingerprint fingerprint = Fingerprint.sha256(CanonicalJson.canonicalize(json.write(covered)));
        Outcome<Object> outcome;
        try {
            outcome = run(bound, key, fingerprint, invocation);
        } catch (OperationFailedException e) {
            throw e.getCause();
        }
        observed.outcome(outcome);
        return outcome.orThrow();
    }

    private Bound bind(Method method, Method invoked) {
        Idempotent annotation = method.getAnnotation(Idempotent.class);
        if (annotation == null) {
            annotation = invoked.getAnnotation(Idempotent.class);
        }
        IdempotentMethod settings = IdempotentMethod.of(method, annotation);
        RetrySafe methodEngine = engine.with(settings.policy(engine.policy()));
        PhasedRetrySafe<Connection> methodPhased = null;
        if (settings.isPhased()) {
            if (phased == null) {
                throw new IllegalStateException("@Idempotent on " + settings + " takes Phases: phased operations need "
                        + "the JDBC store (retrysafe.store.type=jdbc), whose steps commit with their saved values");
            }
            methodPhased = phased.with(settings.policy(engine.policy()));
        }
        // Key first always: the start-up check refuses key last for @Idempotent methods.
        return new Bound(settings, methodEngine, transactional == null ? null : TransactionalRetrySafe.of(methodEngine),
                codec(json, settings, method.getGenericReturnType()), methodPhased);
    }

    /**
     * The caller's resolved scope and the operation, as the filter scopes a route; or the operation
     * alone for a shared method. Never shared for want of a caller.
     */
    private String scope(IdempotentMethod settings) {
        if (settings.scope() == Idempotent.Scope.SHARED) {
            return IdempotentMethod.SHARED_PREFIX + settings.operation();
        }
        String principal = caller.get();
        if (principal == null) {
            throw new UnauthenticatedException("@Idempotent " + settings + " scopes its keys to the caller, and this "
                    + "call has none (no authenticated principal with a name); declare scope = SHARED only for keys "
                    + "global by nature");
        }
        String scope = principal + "|" + settings.operation();
        if (scope.length() > IdempotencyKey.MAX_SCOPE_LENGTH) {
            throw new UnauthenticatedException("the caller's identity cannot scope a key: with the operation it has "
                    + scope.length() + " characters, at most " + IdempotencyKey.MAX_SCOPE_LENGTH + " fit");
        }
        return scope;
    }

    private Outcome<Object> run(Bound bound, IdempotencyKey key, Fingerprint fingerprint, MethodInvocation invocation) {
        IdempotentMethod settings = bound.settings();
        ResponseCodec<Object> codec = bound.codec();
        if (bound.phased() != null) {
            // Its own claim, committed first, and a transaction per local step: never the caller's transaction.
            PhasedRetrySafe<Connection> p = bound.phased();
            Object[] arguments = invocation.getArguments();
            return p.engine().oncePerInstance(key, fingerprint, p.engine().policy().waitForResult(),
                    () -> p.execute(key, fingerprint, phasedMethods.operation(settings, (args, phases) -> {
                        arguments[settings.phasesIndex()] = phases;
                        return proceed(invocation, settings, null);
                    }), arguments));
        }
        if (bound.transactional() == null) {
            RetrySafe e = bound.engine();
            // A duplicate of a call in flight on this instance waits here, in memory, for it to end.
            return e.oncePerInstance(key, fingerprint, e.policy().waitForResult(),
                    () -> e.execute(key, fingerprint, codec, attempt -> proceed(invocation, settings, null)));
        }
        TransactionalRetrySafe tx = bound.transactional();
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            // Join the caller's transaction: it commits the key with its own writes, or rolls both back.
            try {
                Connection connection = DataSourceUtils.getConnection(dataSource);
                TransactionalRetrySafe.Joined<Object> joined = tx.join(connection, key, fingerprint, codec,
                        attempt -> proceed(invocation, settings, connection));
                reportWhenCompleted(joined);
                return joined.outcome();
            } catch (RuntimeException | Error e) {
                // The claim is in the caller's transaction and an exception released nothing: if the
                // caller caught it and committed, the key would stay in progress. It must roll back.
                markRollbackOnly();
                throw e;
            }
        }
        // A duplicate of a call in flight on this instance waits here, holding no connection, for it to end (in
        // the caller's transaction above, it holds the caller's connection anyway, and waits on the key's row).
        return tx.oncePerInstance(key, fingerprint, () -> new TransactionTemplate(transactionManager).execute(status -> {
            Connection connection = DataSourceUtils.getConnection(dataSource);
            TransactionalRetrySafe.Joined<Object> joined = tx.join(connection, key, fingerprint, codec,
                    attempt -> proceed(invocation, settings, connection));
            if (!joined.commit()) {
                status.setRollbackOnly();
            }
            reportWhenCompleted(joined);
            return joined.outcome();
        }));
    }

    /**
     * Runs the method. A declared exception becomes the call's outcome; in a transaction ({@code
     * connection} not null) the method's writes are rolled back to a savepoint first, so that the key and
     * the stored exception commit without them. In a JPA transaction the persistence context is flushed
     * before the savepoint and cleared after its rollback ({@link JpaSavepoint}).
     */
    private Object proceed(MethodInvocation invocation, IdempotentMethod settings, Connection connection)
            throws Exception {
        Savepoint savepoint = null;
        boolean rollbackOnlyBefore = false;
        JpaSavepoint jpa = null;
        if (connection != null && settings.hasReplayedExceptions()) {
            jpa = JPA ? JpaSavepoint.flush(dataSource) : null;
            savepoint = connection.setSavepoint();
            rollbackOnlyBefore = isRollbackOnly();
        }
        try {
            Object result = invocation.proceed();
            if (savepoint != null) {
                connection.releaseSavepoint(savepoint);
            }
            return result;
        } catch (Exception | Error e) {
            if (!settings.replays(e)) {
                throw e;
            }
            if (savepoint != null) {
                if (jpa != null) {
                    jpa.clear();
                }
                connection.rollback(savepoint);
                if (jpa != null && jpa.markedRollbackOnly()) {
                    throw new IllegalStateException("@Idempotent " + settings + " threw " + e.getClass().getName()
                            + ", and a transaction it joined (a @Transactional, a TransactionTemplate) marked the JPA "
                            + "transaction rollback-only for it: JPA cannot take the mark back, so the exception cannot "
                            + "be stored with the key. Keep that transaction from rolling back on it, e.g. "
                            + "@Transactional(noRollbackFor = " + e.getClass().getSimpleName() + ".class); RetrySafe "
                            + "discards the method's writes itself", e);
                }
                if (!rollbackOnlyBefore) {
                    // Marked by the method's own @Transactional on the way out; its writes are gone now.
                    resetRollbackOnly();
                }
            }
            return new Thrown(e);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
    /**
     * The metrics hear a stored result once the transaction holding it has committed, and only
     * then: a rollback reports it released, a failed commit a store error.
     */
    private static void reportWhenCompleted(TransactionalRetrySafe.Joined<Object> joined) {
        if (!joined.commit()) {
            return; // reported by join: nothing of it was to be committed
        }
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            joined.committed(); // a transaction without synchronization: its end cannot be heard
            return;
        }
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public void afterCompletion(int status) {
                switch (status) {
                    case STATUS_COMMITTED -> joined.committed();
                    case STATUS_ROLLED_BACK -> joined.rolledBack();
                    default -> joined.commitFailed(new IllegalStateException(
                            "the transaction's commit failed or its outcome is unknown"));
                }
            }
        });
    }

    /** As a participating {@code @Transactional} method that throws does: the caller's commit becomes a rollback. */
    private void markRollbackOnly() {
        try {
            TransactionAspectSupport.currentTransactionStatus().setRollbackOnly();
            return;
        } catch (NoTransactionException e) {
            // Not begun by @Transactional (a TransactionTemplate, for one): mark the connection's holder.
        }
        if (TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder holder) {
            holder.setRollbackOnly();
        }
    }

    private boolean isRollbackOnly() {
        return TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder holder
                && holder.isRollbackOnly();
    }

    private void resetRollbackOnly() {
        if (TransactionSynchronizationManager.getResource(dataSource) instanceof ConnectionHolder holder) {
            holder.resetRollbackOnly();
        }
    }

    /** The return type as JSON; a declared exception as its class name and its properties as JSON. */
    static ResponseCodec<Object> codec(MethodJson json, IdempotentMethod settings, Type returnType) {
        Function<byte[], Object> reader = json.reader(returnType);
        return new ResponseCodec<>() {
            @Override
            public StoredResponse encode(Object result) {
                if (result instanceof Thrown thrown) {
                    return StoredResponse.of(200, Map.of(EXCEPTION_HEADER, List.of(thrown.exception().getClass().getName())),
                            json.writeException(thrown.exception()));
                }
                return StoredResponse.of(200, json.write(result));
            }

            @Override
            public Object decode(StoredResponse stored) {
                List<String> exception = stored.headers().get(EXCEPTION_HEADER);
                if (exception == null || exception.isEmpty()) {
                    return reader.apply(stored.body());
                }
                Class<? extends Throwable> thrown = settings.replayedException(exception.get(0));
                if (thrown == null) {
                    throw new IllegalStateException("@Idempotent " + settings + ": the stored outcome is a "
                            + exception.get(0) + ", which the method no longer declares in replayedExceptions");
                }
                return new Thrown(json.readException(stored.body(), thrown));
            }
        };
    }
}
