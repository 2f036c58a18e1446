package io.retrysafe.spring;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.OperationPolicy;
import io.retrysafe.OutcomePolicy;
import io.retrysafe.Phases;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.objenesis.SpringObjenesis;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.interceptor.TransactionAttribute;
import org.springframework.transaction.interceptor.TransactionAttributeSource;
import org.springframework.util.ClassUtils;

/**
 * One {@link Idempotent} method's settings, parsed and checked: the same parsing serves the check of
 * every annotated bean method at start-up and the interceptor at the first call, so a mistake fails the
 * start, naming the method, and never a call.
 */
final class IdempotentMethod {
    /** The scope of {@link Idempotent.Scope#SHARED} methods starts with it; a caller's with the resolved scope. */
    static final String SHARED_PREFIX = "shared|";

    private static final SpelExpressionParser PARSER = new SpelExpressionParser();
    private static final SpringObjenesis OBJENESIS = new SpringObjenesis();

    private final Method method;
    private final Idempotent.Scope scope;
    private final String operation;
    private final Expression key;
    private final Expression fingerprint;
    private final Duration retention;
    private final Duration waitForResult;
    private final List<Class<? extends Throwable>> replayedExceptions;
    private final int phasesIndex;

    private IdempotentMethod(Method method, Idempotent annotation) {
        this.method = method;
        this.phasesIndex = phasesIndex(method);
        this.scope = annotation.scope();
        this.operation = annotation.operation().isEmpty()
                ? method.getDeclaringClass().getName() + "." + method.getName() : annotation.operation();
        if (operation.isBlank() || operation.indexOf('|') >= 0) {
            throw invalid("operation must not be blank nor contain '|', but was \"" + operation + "\"");
        }
        if (SHARED_PREFIX.length() + operation.length() > IdempotencyKey.MAX_SCOPE_LENGTH / 2) {
            // Half the scope column: the caller's part needs room too.
            throw invalid("operation must have at most " + (IdempotencyKey.MAX_SCOPE_LENGTH / 2 - SHARED_PREFIX.length())
                    + " characters, but had " + operation.length() + "; set a shorter one with operation = \"…\"");
        }
        this.key = expression("key", annotation.key());
        this.fingerprint = annotation.fingerprint().isEmpty() ? null : expression("fingerprint", annotation.fingerprint());
        this.retention = duration("retention", annotation.retention());
        this.waitForResult = duration("waitForResult", annotation.waitForResult());
        this.replayedExceptions = List.of(annotation.replayedExceptions());
        for (Class<? extends Throwable> type : replayedExceptions) {
            if (!RuntimeException.class.isAssignableFrom(type) && !isDeclared(type)) {
                throw invalid("replayedExceptions has " + type.getName() + ", which the method can never throw: it is "
                        + "checked and not in its throws clause");
            }
        }
    }

    /**
     * The parameter of type {@link Phases} that makes the method a phased operation, or -1. It must be
     * {@code Phases<Connection>} (the JDBC store's steps), the method's only one, and the method must not be
     * {@code @Transactional}: each local step is a transaction of its own.
     */
    private int phasesIndex(Method m) {
        int found = -1;
        Type[] types = m.getGenericParameterTypes();
        for (int i = 0; i < types.length; i++) {
            if (!Phases.class.equals(ResolvableType.forType(types[i]).toClass())) {
                continue;
            }
            if (found >= 0) {
                throw invalid("it has more than one Phases parameter; a phased method has one");
            }
            Class<?> step = ResolvableType.forType(types[i]).getGeneric(0).resolve();
            if (step != null && step != Connection.class) {
                throw invalid("its steps take " + step.getName() + ", but the starter's phased operations run on the "
                        + "JDBC store, whose steps take a java.sql.Connection: declare Phases<Connection>");
            }
            found = i;
        }
        if (found >= 0 && (AnnotatedElementUtils.hasAnnotation(m, Transactional.class)
                || AnnotatedElementUtils.hasAnnotation(m.getDeclaringClass(), Transactional.class))) {
            throw invalid("it is a phased operation (it takes Phases) and @Transactional: each local step commits in a "
                    + "transaction of its own, which one around the method would hold open; remove @Transactional");
        }
        return found;
    }

    /** The index of the method's {@link Phases} parameter, or -1 when it is not a phased operation. */
    int phasesIndex() {
        return phasesIndex;
    }

    boolean isPhased() {
        return phasesIndex >= 0;
    }

    /** The name its phased operation is saved under: found again by it after a restart. */
    String phasedName() {
        return "method:" + operation;
    }

    /** The settings of {@code method}, checked. */
    static IdempotentMethod of(Method method, Idempotent annotation) {
        return new IdempotentMethod(method, annotation);
    }

    /**
     * Checks every {@link Idempotent} method of the beans' classes against {@code defaults}, without
     * creating a bean; with {@code irreversibleRollbackOnly} (the transaction manager cannot take a
     * rollback-only mark back: JPA's), also that no method's own transaction rolls back on a declared exception.
     *
     * @return the methods checked
     * @throws IllegalStateException naming the first method whose settings are wrong
     */
    static List<IdempotentMethod> checkAll(ListableBeanFactory beans, OperationPolicy defaults,
            TransactionAttributeSource irreversibleRollbackOnly) {
        return checkAll(beans, defaults, irreversibleRollbackOnly, (bean, method) -> { });
    }

    /** As {@link #checkAll(ListableBeanFactory, OperationPolicy, TransactionAttributeSource)}, telling {@code each} every method's bean. */
    static List<IdempotentMethod> checkAll(ListableBeanFactory beans, OperationPolicy defaults,
            TransactionAttributeSource irreversibleRollbackOnly, java.util.function.BiConsumer<String, IdempotentMethod> each) {
        List<IdempotentMethod> checked = new ArrayList<>();
        for (String name : beans.getBeanDefinitionNames()) {
            Class<?> type = beans.getType(name, false);
            if (type == null) {
                continue;
            }
            Map<Method, Idempotent> methods;
            try {
                methods = MethodIntrospector.selectMethods(ClassUtils.getUserClass(type),
                        (MethodIntrospector.MetadataLookup<Idempotent>) m ->
                                AnnotatedElementUtils.findMergedAnnotation(m, Idempotent.class));
            } catch (LinkageError e) {
                // A class whose methods name a type missing from the class path: none of them is ours to check.
                continue;
            }
            for (Map.Entry<Method, Idempotent> e : methods.entrySet()) {
                IdempotentMethod method = of(e.getKey(), e.getValue());
                method.policy(defaults);
                if (irreversibleRollbackOnly != null) {
                    method.checkNoRollbackOnReplayed(irreversibleRollbackOnly, ClassUtils.getUserClass(type));
                }
                checked.add(method);
                each.accept(name, method);
            }
        }
        return checked;
    }

    /** This method's policy: {@code defaults} ({@code retrysafe.policy.*}) with the method's own settings. */
    OperationPolicy policy(OperationPolicy defaults) {
        // A method's result is an answer, whatever it holds: store every return.
        OperationPolicy.Builder b = OperationPolicy.from(defaults).outcomePolicy(OutcomePolicy.STORE_ALL);
        try {
            if (retention != null) {
                b.retention(retention);
            }
            if (waitForResult != null) {
                b.waitForResult(waitForResult);
            }
            return b.build();
        } catch (IllegalArgumentException | IllegalStateException e) {
            throw invalid(e.getMessage());
        }
    }

    Method method() {
        return method;
    }

    Idempotent.Scope scope() {
        return scope;
    }

    String operation() {
        return operation;
    }

    Expression key() {
        return key;
    }

    /** What the fingerprint covers; null: every argument. */
    Expression fingerprint() {
        return fingerprint;
    }

    boolean hasReplayedExceptions() {
        return !replayedExceptions.isEmpty();
    }

    /** Whether {@code thrown} is one of the method's declared answers, stored and thrown again to retries. */
    boolean replays(Throwable thrown) {
        for (Class<? extends Throwable> type : replayedExceptions) {
            if (type.isInstance(thrown)) {
                return true;
            }
        }
        return false;
    }

    /** The declared answer type named {@code className}, or null when the method declares none such (any more). */
    Class<? extends Throwable> replayedException(String className) {
        for (Class<? extends Throwable> type : replayedExceptions) {
            if (type.getName().equals(className)) {
                return type;
            }
        }
        try {
            Class<?> stored = ClassUtils.forName(className, method.getDeclaringClass().getClassLoader());
            for (Class<? extends Throwable> type : replayedExceptions) {
                if (type.isAssignableFrom(stored)) {
                    return stored.asSubclass(Throwable.class);
                }
            }
        } catch (ClassNotFoundException | LinkageError e) {
            // Gone since it was stored: no answer to replay.
        }
        return null;
    }

    /**
     * Refuses a method whose own {@code @Transactional} rolls back on one of its replayed exceptions, where
     * the rollback-only mark it sets on the way out cannot be taken back: the whole transaction, the key and
     * the stored exception with it, would roll back.
     */
    private void checkNoRollbackOnReplayed(TransactionAttributeSource source, Class<?> targetClass) {
        TransactionAttribute attribute = source.getTransactionAttribute(method, targetClass);
        if (attribute == null) {
            return;
        }
        for (Class<? extends Throwable> type : replayedExceptions) {
            // The rules match on the exception's class alone: an instance made without a constructor will do.
            if (attribute.rollbackOn(OBJENESIS.newInstance(type))) {
                throw invalid("its @Transactional rolls back on " + type.getName() + ", one of its replayedExceptions, "
                        + "and with JPA the rollback-only mark it sets cannot be taken back: the key and the stored "
                        + "exception would roll back with the method's writes. Declare @Transactional(noRollbackFor = "
                        + type.getSimpleName() + ".class); RetrySafe discards the method's writes itself");
            }
        }
    }

    private boolean isDeclared(Class<? extends Throwable> type) {
        for (Class<?> declared : method.getExceptionTypes()) {
            if (declared.isAssignableFrom(type)) {
                return true;
            }
        }
        return false;
    }

    private Expression expression(String attribute, String spel) {
        if (spel.isBlank()) {
            throw invalid(attribute + " must be a SpEL expression such as \"#orderNumber\", but was blank");
        }
        try {
            return PARSER.parseExpression(spel);
        } catch (ParseException e) {
            throw invalid(attribute + " \"" + spel + "\" is not a SpEL expression: " + e.getMessage());
        }
    }

    private Duration duration(String attribute, String value) {
        if (value.isEmpty()) {
            return null;
        }
        try {
            return DurationStyle.detectAndParse(value.strip());
        } catch (IllegalArgumentException e) {
            throw invalid(attribute + " must be a duration such as 7d, 12h, 30s or P7D, but was \"" + value + "\"");
        }
    }

    private IllegalStateException invalid(String problem) {
        return new IllegalStateException("@Idempotent on " + this + ": " + problem);
    }

    @Override
    public String toString() {
        List<String> parameters = new ArrayList<>();
        for (Class<?> p : method.getParameterTypes()) {
            parameters.add(p.getSimpleName());
        }
        return method.getDeclaringClass().getName() + "." + method.getName() + "(" + String.join(", ", parameters) + ")";
    }
}
