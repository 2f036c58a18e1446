package io.retrysafe.inbox;

/**
 * Where a failed handler is tried again. Both count attempts the same way, wait
 * {@link io.retrysafe.Backoff#delay delay(n)} before retry {@code n} of the same {@link io.retrysafe.Backoff},
 * and dead-letter the message once attempt {@code maxAttempts} failed.
 */
public enum RetryStyle {
    /**
     * Within one {@link Inbox#process} call: sleep the back-off on the caller's thread, run again.
     * For brokers whose partition or queue waits behind the message anyway (Kafka, RabbitMQ with a
     * prefetch of one). The broker's delivery count is not used: each delivery starts at attempt 1.
     */
    IN_PROCESS,
    /**
     * By the broker: a failure answers {@link InboxResult.RetryLater} with the back-off's delay for
     * the delivery's count, and the adapter asks for a redelivery after it (JetStream's
     * {@code nakWithDelay}). Attempt {@code n} is the broker's delivery {@code n}, so every
     * {@link Delivery} must carry its {@link Delivery#deliveryCount}.
     */
    BROKER_REDELIVERY
}
