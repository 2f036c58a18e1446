package io.retrysafe.inbox.tck;

import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;

/**
 * What a broker adapter gives {@link InboxContract}: channels on a real broker, consumers built
 * with the adapter's public API, and a consumer in a child JVM that can be killed. Keep the
 * adapter's defaults everywhere the {@link ConsumerSpec} says nothing.
 */
public interface InboxHarness {

    /** The database of the inbox (its store's data source); the contract keeps its effects table there. */
    DataSource dataSource();

    /**
     * A channel of its own for one test (a topic, a stream and consumer, a queue), with its dead-letter
     * destination, named after {@code name} and unique to this run, so that tests share the broker
     * without cleanup. Any deduplication the broker does itself (JetStream's duplicate window) must
     * be off: the contract tests the inbox's.
     */
    Channel channel(String name) throws Exception;

    /** One channel and what runs on it. */
    interface Channel extends AutoCloseable {

        /** The inbox scope its consumers use: {@code kafka:<group>:<topic>}, {@code nats:<stream>:<consumer>}, … */
        String scope();

        /** Publishes {@code message} (its id in the adapter's default id header) and returns once the broker acknowledged it. */
        void publish(TestMessage message) throws Exception;

        /** Starts a consumer in this JVM; it runs until closed. */
        RunningConsumer consume(ConsumerSpec spec) throws Exception;

        /** Every message on the dead-letter destination so far, oldest first; waits for none. */
        List<ReceivedMessage> deadLetters() throws Exception;

        /**
         * Starts a consumer of this channel in a child JVM, with {@link Effects#childHandler} as its
         * handler's work and {@link Effects#holdAfterCommit()} as its inbox listener: it handles the
         * first message, commits, says so and blocks before acknowledging it.
         */
        DyingConsumer consumeInChildJvm() throws Exception;

        /** Stops what still runs on the channel; deleting the broker's objects is optional. */
        @Override
        void close() throws Exception;
    }

    /** A consumer started by {@link Channel#consume}. */
    interface RunningConsumer extends AutoCloseable {
        /** Stops it and waits until it stopped. */
        @Override
        void close() throws Exception;
    }

    /** The child JVM of {@link Channel#consumeInChildJvm}. */
    interface DyingConsumer extends AutoCloseable {
        /** Waits until the child printed {@value Effects#COMMITTED}: its transaction committed, nothing acknowledged. */
        void awaitCommitted(Duration bound) throws Exception;

        /** SIGKILL, and waits until it is gone: no shutdown hook, no acknowledgement. */
        void kill() throws Exception;

        @Override
        void close() throws Exception;

        /**
         * The three steps from a child process handle's methods:
         * {@code DyingConsumer.of(child::awaitLine, child::kill, child)}.
         */
        static DyingConsumer of(Await awaitCommitted, Step kill, AutoCloseable close) {
            return new DyingConsumer() {
                @Override
                public void awaitCommitted(Duration bound) throws Exception {
                    awaitCommitted.await(bound);
                }

                @Override
                public void kill() throws Exception {
                    kill.run();
                }

                @Override
                public void close() throws Exception {
                    close.close();
                }
            };
        }

        /** Waits for the child, up to a bound. */
        @FunctionalInterface
        interface Await {
            void await(Duration bound) throws Exception;
        }

        /** One step that may fail. */
        @FunctionalInterface
        interface Step {
            void run() throws Exception;
        }
    }
}
