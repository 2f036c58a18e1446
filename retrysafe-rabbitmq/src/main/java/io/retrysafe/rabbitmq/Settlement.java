package io.retrysafe.rabbitmq;

import java.time.Duration;

/** What the consumer does with a delivery once it was processed. */
sealed interface Settlement {
    Settlement ACK = new Ack();

    /** Done (processed, replayed, or dead-lettered and confirmed): {@code basicAck}. */
    record Ack() implements Settlement {
    }

    /**
     * Not done, through no fault of the message (the database, another delivery holding its id, the
     * dead-letter publish): processed again after {@code delay}, on the same worker, before the next
     * message of the queue; on close, {@code basicNack} with requeue.
     */
    record Retry(Duration delay, String reason) implements Settlement {
    }
}
