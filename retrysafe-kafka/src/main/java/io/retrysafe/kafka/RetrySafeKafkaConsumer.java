package io.retrysafe.kafka;

import io.retrysafe.inbox.InboxResult;
import io.retrysafe.internal.Require;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;

/**
 * A poll loop that processes every record through a {@link KafkaInbox} and commits
 * a partition's offset only past records that are done: committed in the database with their
 * message id, or acknowledged by the dead-letter topic. A crash between the database commit and the
 * offset commit redelivers the record, and the processor skips it as a duplicate.
 *
 * <pre>{@code
 * Properties config = new Properties();
 * config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "kafka:9092");
 * config.put(ConsumerConfig.GROUP_ID_CONFIG, "shipping");                 // the processor's consumer group
 * config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);            // this loop commits
 * KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config, new StringDeserializer(), new StringDeserializer());
 * RetrySafeKafkaConsumer<String, String> loop = RetrySafeKafkaConsumer.builder(consumer, processor).topics("orders").build();
 * executor.submit(loop);            // runs until shutdown(), then closes the consumer
 * // on stop:
 * loop.shutdown();
 * }</pre>
 *
 * <p>Records are processed one by one, in order within their partition; after each batch the offsets
 * past those done are committed ({@code commitSync}). A record to retry later ({@link InboxResult.RetryLater}:
 * its id held by another consumer in a rebalance, the database down) stops its partition: the consumer
 * seeks back and pauses it for the result's {@code delay}. On a revocation the loop commits what is done;
 * lost partitions are dropped uncommitted, and their new owner replays what was already processed.
 *
 * <p>The loop owns the consumer from {@link #run()} on: it subscribes, polls, commits and closes
 * it. The consumer must have {@code enable.auto.commit=false} and the processor's consumer group as
 * its {@code group.id}. {@link #shutdown()} is the only method to call from another thread.
 */
public final class RetrySafeKafkaConsumer<K, V> implements Runnable {
    public static final Duration DEFAULT_POLL_TIMEOUT = Duration.ofSeconds(1);

    private static final System.Logger LOG = System.getLogger(RetrySafeKafkaConsumer.class.getName());

    private final Consumer<K, V> consumer;
    private final KafkaInbox<K, V> processor;
    private final List<String> topics;
    private final Duration pollTimeout;
    /** Per partition, the offset past its last record that is done and not yet committed. */
    private final Map<TopicPartition, OffsetAndMetadata> done = new HashMap<>();
    /** Partitions paused behind a record to retry, and when (System.nanoTime) to resume them. */
    private final Map<TopicPartition, Long> pausedUntil = new HashMap<>();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean stopping = new AtomicBoolean();

    private RetrySafeKafkaConsumer(Builder<K, V> b) {
        this.consumer = b.consumer;
        this.processor = b.processor;
        this.topics = List.copyOf(b.topics);
        this.pollTimeout = b.pollTimeout != null ? b.pollTimeout : DEFAULT_POLL_TIMEOUT;
    }

    public static <K, V> Builder<K, V> builder(Consumer<K, V> consumer, KafkaInbox<K, V> processor) {
        return new Builder<>(consumer, processor);
    }

    /**
     * Subscribes and processes records until {@link #shutdown()}; then commits what is done and
     * closes the consumer. Runs once. An exception from the consumer (other than the wake-up of a
     * shutdown) or the processor ends the loop the same way and propagates.
     *
     * @throws IllegalStateException if the consumer's group is not the processor's
     */
    @Override
    public void run() {
        if (!started.compareAndSet(false, true)) {
            throw new IllegalStateException("a loop runs once, but run() was called again");
        }
        try {
            String group = consumer.groupMetadata().groupId();
            if (!processor.consumerGroup().equals(group)) {
                throw new IllegalStateException("the consumer's group.id must be the processor's consumer group "
                        + processor.consumerGroup() + ", but was " + group);
            }
            consumer.subscribe(topics, new CommitOnRevocation());
            while (!stopping.get()) {
                resumeDuePartitions();
                ConsumerRecords<K, V> records = consumer.poll(pollTimeout);
                for (TopicPartition partition : records.partitions()) {
                    if (stopping.get()) {
                        break;
                    }
                    process(partition, records.records(partition));
                }
                commit(new HashMap<>(done), "after a batch");
            }
        } catch (WakeupException e) {
            if (!stopping.get()) {
                throw e;
            }
        } finally {
            try {
                commit(new HashMap<>(done), "on shutdown");
            } finally {
                consumer.close();
            }
        }
    }

    /**
     * Asks the loop to stop: it finishes the record in hand (with its retries), commits what is done
     * and closes the consumer. Returns at once; {@link #run()} returns when the loop has stopped.
     */
    public void shutdown() {
        if (stopping.compareAndSet(false, true)) {
            consumer.wakeup();
        }
    }

    private void process(TopicPartition partition, List<ConsumerRecord<K, V>> records) {
        for (ConsumerRecord<K, V> record : records) {
            if (stopping.get()) {
                return;
            }
            InboxResult result = processor.process(record);
            if (result instanceof InboxResult.RetryLater later) {
                // Nothing past this record may be committed: read it again once the partition resumes.
                consumer.seek(partition, new OffsetAndMetadata(record.offset(), record.leaderEpoch(), ""));
                consumer.pause(List.of(partition));
                pausedUntil.put(partition, System.nanoTime() + later.delay().toNanos());
                return;
            }
            done.put(partition, new OffsetAndMetadata(record.offset() + 1, record.leaderEpoch(), ""));
        }
    }

    private void resumeDuePartitions() {
        long now = System.nanoTime();
        List<TopicPartition> due = new ArrayList<>();
        pausedUntil.entrySet().removeIf(paused -> now - paused.getValue() >= 0 && due.add(paused.getKey()));
        due.retainAll(consumer.assignment());
        if (!due.isEmpty()) {
            consumer.resume(due);
        }
    }

    /** Commits {@code offsets}; a failure is logged, and the offsets stay to be committed later. */
    private void commit(Map<TopicPartition, OffsetAndMetadata> offsets, String when) {
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(offsets);
            offsets.forEach(done::remove);
        } catch (WakeupException | InterruptException e) {
            throw e;
        } catch (KafkaException e) {
            LOG.log(Level.WARNING, () -> "[" + processor.engine().name() + "] could not commit offsets " + when + " "
                    + offsets + ": " + e + "; they are committed later, or if the partitions moved, their records "
                    + "are redelivered to the new owner, which skips them as duplicates");
        }
    }

    private final class CommitOnRevocation implements ConsumerRebalanceListener {

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            Map<TopicPartition, OffsetAndMetadata> revoked = new HashMap<>(done);
            revoked.keySet().retainAll(partitions);
            commit(revoked, "on revocation");
            forget(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            // Positions come from the committed offsets: nothing to do.
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            // Another member may own them already: committing now could move its offsets.
            forget(partitions);
        }

        private void forget(Collection<TopicPartition> partitions) {
            done.keySet().removeAll(partitions);
            pausedUntil.keySet().removeAll(partitions);
        }
    }

    @Override
    public String toString() {
        return "RetrySafeKafkaConsumer[topics=" + topics + ", pollTimeout=" + pollTimeout + ", processor=" + processor
                + "]";
    }

    /** Builds a {@link RetrySafeKafkaConsumer}; each value may be set once. */
    public static final class Builder<K, V> {
        private final Consumer<K, V> consumer;
        private final KafkaInbox<K, V> processor;
        private List<String> topics;
        private Duration pollTimeout;

        private Builder(Consumer<K, V> consumer, KafkaInbox<K, V> processor) {
            this.consumer = Require.notNull(consumer, "consumer");
            this.processor = Require.notNull(processor, "processor");
        }

        /** The topics to subscribe to. Required. */
        public Builder<K, V> topics(Collection<String> topics) {
            Require.unset(this.topics, "topics");
            Require.notNull(topics, "topics");
            if (topics.isEmpty()) {
                throw new IllegalArgumentException("topics must not be empty, but was " + topics);
            }
            for (String topic : topics) {
                Require.notNull(topic, "topic");
                processor.scope(topic); // a scope too long for the store is a configuration error: say so now
            }
            this.topics = List.copyOf(topics);
            return this;
        }

        public Builder<K, V> topics(String... topics) {
            return topics(List.of(Require.notNull(topics, "topics")));
        }

        /** How long one poll waits for records; also how soon a paused partition resumes at the latest. */
        public Builder<K, V> pollTimeout(Duration pollTimeout) {
            Require.unset(this.pollTimeout, "pollTimeout");
            this.pollTimeout = Require.positive(pollTimeout, "pollTimeout");
            return this;
        }

        public RetrySafeKafkaConsumer<K, V> build() {
            if (topics == null) {
                throw new IllegalStateException("topics must be set");
            }
            return new RetrySafeKafkaConsumer<>(this);
        }
    }
}
