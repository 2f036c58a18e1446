package io.retrysafe.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.aot.hint.annotation.Reflective;

/**
 * Runs the method at most once per caller and key: a second call by the same caller with the same key
 * returns the first call's result without running the method; the same key with other arguments is
 * refused ({@link io.retrysafe.FingerprintMismatchException}, 422); a call while the first is in flight
 * waits up to {@link #waitForResult()} (and, with a JDBC store, the store's lock timeout), then is refused
 * ({@link io.retrysafe.InProgressException}, 409).
 *
 * <p>For natural keys: the business identifier the request already carries.
 *
 * <pre>{@code
 * @Idempotent(key = "#orderNumber", retention = "7d", replayedExceptions = InsufficientFundsException.class)
 * @Transactional
 * public PaymentReceipt payOrder(String orderNumber, PaymentRequest request) { … }
 * }</pre>
 *
 * <p>Keys belong to the caller ({@link Scope#PRINCIPAL}, the default): the caller is resolved from the
 * current HTTP request by the application's {@code ScopeResolver}, as the filter does, and a call without
 * one is refused ({@link io.retrysafe.UnauthenticatedException}, 401). {@link Scope#SHARED} opts a method
 * into one scope for every caller.
 *
 * <p>With a JDBC store the record joins the caller's transaction (one is started when there is
 * none): the key, the method's writes and its stored result commit together. Results are stored as
 * JSON and read back as the method's return type. An exception releases the key, unless it is one of
 * {@link #replayedExceptions()}. Every setting is checked when the application starts.
 *
 * <p>A method that calls another service takes a {@link io.retrysafe.Phases Phases&lt;Connection&gt;}
 * parameter (callers pass null) and writes its work as steps: it is then a phased operation on the JDBC
 * store, with its own claim and a transaction per local step, never its caller's transaction (it must not be
 * {@code @Transactional}). A call that failed mid-way resumes at its last step; one nobody called again is
 * driven to its end by the starter's completer, which calls the method with its saved arguments.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
// AOT: the method and the types it takes and returns are kept for reflection (native images).
@Reflective(IdempotentReflectiveProcessor.class)
public @interface Idempotent {

    /** Whose keys a method's keys are. */
    enum Scope {
        /**
         * The authenticated caller's (the default): another caller's call with the same key runs on its
         * own, and a call without a caller is refused.
         */
        PRINCIPAL,
        /**
         * One scope for every caller: whoever calls with a key gets the answer of that key's first call,
         * even another caller's. Only for keys global by nature (an order number any clerk may pay), and
         * with a fingerprint that refuses what a caller must not be answered (cover the caller in it).
         */
        SHARED
    }

    /** SpEL over the method's parameters ({@code #name}) giving the key, e.g. {@code "#request.orderNumber"}. */
    String key();

    /** Whose keys these are; {@link Scope#PRINCIPAL} unless the key is global by nature. */
    Scope scope() default Scope.PRINCIPAL;

    /**
     * The operation part of the scope; empty: the method's fully qualified class name and name
     * ({@code com.example.Orders.pay}). Keys are unique per operation; set it to keep a method's keys
     * across a rename, or to have two methods share keys.
     */
    String operation() default "";

    /**
     * SpEL giving what the fingerprint covers; empty: every argument. A different fingerprint
     * under the same key is refused.
     */
    String fingerprint() default "";

    /**
     * How long the key protects the call's intent, as {@code 7d}, {@code 12h}, {@code 30m} or ISO-8601
     * ({@code P7D}); empty: {@code retrysafe.policy.retention}.
     */
    String retention() default "";

    /**
     * How long a duplicate waits for the call in flight to finish, then replays its result (or is refused
     * with 409), as {@code 2s} or ISO-8601; empty: {@code retrysafe.policy.wait-for-result}.
     */
    String waitForResult() default "";

    /**
     * Exceptions that are the call's answer (declared business refusals such as an insufficient balance):
     * stored like a result, the method's writes rolled back, and thrown again to every retry without
     * running the method. Stored as JSON by their properties and read back through their constructor.
     * Every other exception releases the key: a retry runs again. On a {@code JpaTransactionManager} the
     * method's own {@code @Transactional} must not roll back on them ({@code noRollbackFor}): JPA cannot
     * take a rollback-only mark back, so the start fails otherwise.
     */
    Class<? extends Throwable>[] replayedExceptions() default {};
}
