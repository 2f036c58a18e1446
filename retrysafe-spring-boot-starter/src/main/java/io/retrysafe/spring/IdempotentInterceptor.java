package io.retrysafe.spring;

import io.retrysafe.CanonicalJson;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationFailedException;
import io.retrysafe.OperationPolicy;
import io.retrysafe.OutcomePolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import javax.sql.DataSource;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.NoTransactionException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.interceptor.TransactionAspectSupport;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/** Applies {@link Idempotent}: evaluates the key, fingerprints the arguments, and runs the method through the engine. */
final class IdempotentInterceptor implements MethodInterceptor {
    private final RetrySafe engine;
    private final TransactionalRetrySafe transactional;
    private final PlatformTransactionManager transactionManager;
    private final DataSource dataSource;
    private final KeyRules keyRules;
    private final MethodJson json;
    private final SpelExpressionParser parser = new SpelExpressionParser();
    private final ParameterNameDiscoverer names = new DefaultParameterNameDiscoverer();
    private final Map<String, Expression> expressions = new ConcurrentHashMap<>();

    /** {@code transactional}, {@code transactionManager} and {@code dataSource} are null with a non-JDBC store. */
    IdempotentInterceptor(RetrySafe engine, TransactionalRetrySafe transactional,
            PlatformTransactionManager transactionManager, DataSource dataSource, KeyRules keyRules, MethodJson json) {
        // A method's result is an answer, whatever it holds: store every return; exceptions release.
        this.engine = engine.with(OperationPolicy.from(engine.policy()).outcomePolicy(OutcomePolicy.STORE_ALL).build());
        this.transactional = transactional == null ? null : TransactionalRetrySafe.of(this.engine);
        this.transactionManager = transactionManager;
        this.dataSource = dataSource;
        this.keyRules = keyRules;
        this.json = json;
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Method method = AopUtils.getMostSpecificMethod(invocation.getMethod(),
                invocation.getThis() == null ? invocation.getMethod().getDeclaringClass() : invocation.getThis().getClass());
        Idempotent annotation = method.getAnnotation(Idempotent.class);
        if (annotation == null) {
            annotation = invocation.getMethod().getAnnotation(Idempotent.class);
        }
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(invocation.getThis(), method,
                invocation.getArguments(), names);
        Object keyValue = expression(annotation.key()).getValue(context);
        if (keyValue == null) {
            throw new IllegalArgumentException("@Idempotent key " + annotation.key() + " of " + method + " was null");
        }
        String scope = annotation.scope().isEmpty()
                ? method.getDeclaringClass().getSimpleName() + "." + method.getName() : annotation.scope();
        IdempotencyKey key = keyRules.key(scope, keyValue.toString());
        Object covered = annotation.fingerprint().isEmpty() ? invocation.getArguments()
                : expression(annotation.fingerprint()).getValue(context);
        Fingerprint fingerprint = Fingerprint.sha256(CanonicalJson.canonicalize(json.write(covered)));
        ResponseCodec<Object> codec = codec(method.getGenericReturnType());
        Outcome<Object> outcome;
        try {
            outcome = run(key, fingerprint, codec, invocation);
        } catch (OperationFailedException e) {
            throw e.getCause();
        }
        return outcome.orThrow();
    }

    private Outcome<Object> run(IdempotencyKey key, Fingerprint fingerprint, ResponseCodec<Object> codec,
            MethodInvocation invocation) {
        io.retrysafe.Operation<Object> op = attempt -> {
            try {
                return invocation.proceed();
            } catch (Exception | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        };
        if (transactional == null) {
            return engine.execute(key, fingerprint, codec, op);
        }
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            // Join the caller's transaction: it commits the key with its own writes, or rolls both back.
            try {
                TransactionalRetrySafe.Joined<Object> joined = transactional.join(
                        DataSourceUtils.getConnection(dataSource), key, fingerprint, codec, op);
                reportWhenCompleted(joined);
                return joined.outcome();
            } catch (RuntimeException | Error e) {
                // The claim is in the caller's transaction and an exception released nothing: if the
                // caller caught it and committed, the key would stay in progress. It must roll back.
                markRollbackOnly();
                throw e;
            }
        }
        return new TransactionTemplate(transactionManager).execute(status -> {
            TransactionalRetrySafe.Joined<Object> joined = transactional.join(DataSourceUtils.getConnection(dataSource),
                    key, fingerprint, codec, op);
            if (!joined.commit()) {
                status.setRollbackOnly();
            }
            reportWhenCompleted(joined);
            return joined.outcome();
        });
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

    private Expression expression(String spel) {
        return expressions.computeIfAbsent(spel, parser::parseExpression);
    }

    private ResponseCodec<Object> codec(Type returnType) {
        Function<byte[], Object> reader = json.reader(returnType);
        return new ResponseCodec<>() {
            @Override
            public StoredResponse encode(Object result) {
                return StoredResponse.of(200, json.write(result));
            }

            @Override
            public Object decode(StoredResponse stored) {
                return reader.apply(stored.body());
            }
        };
    }
}
