package io.retrysafe.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.aot.hint.annotation.Reflective;

/**
 * Runs the method at most once per key: a second call with the same key returns the first call's
 * result without running the method; the same key with other arguments is refused
 * ({@link io.retrysafe.FingerprintMismatchException}, 422); a call while the first is in flight
 * waits up to the store's lock timeout, then is refused ({@link io.retrysafe.InProgressException}, 409).
 *
 * <p>For natural keys: the business identifier the request already carries.
 *
 * <pre>{@code
 * @Idempotent(key = "#orderNumber")
 * @Transactional
 * public PaymentReceipt payOrder(String orderNumber, PaymentRequest request) { … }
 * }</pre>
 *
 * <p>With a JDBC store the record joins the caller's transaction (one is started when there is
 * none): the key, the method's writes and its stored result commit together. Results are stored as
 * JSON and read back as the method's return type; an exception stores nothing and propagates.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
// AOT: the method and the types it takes and returns are kept for reflection (native images).
@Reflective(IdempotentReflectiveProcessor.class)
public @interface Idempotent {

    /** SpEL over the method's parameters ({@code #name}) giving the key, e.g. {@code "#request.orderNumber"}. */
    String key();

    /** The operation's scope; empty: {@code ClassName.methodName}. Keys are unique per scope. */
    String scope() default "";

    /**
     * SpEL giving what the fingerprint covers; empty: every argument. A different fingerprint
     * under the same key is refused.
     */
    String fingerprint() default "";
}
