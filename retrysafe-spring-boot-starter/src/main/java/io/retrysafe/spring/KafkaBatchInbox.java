package io.retrysafe.spring;

import io.retrysafe.StoreUnavailableException;
import io.retrysafe.inbox.DeadLetterReason;
import io.retrysafe.inbox.InboxResult;
import io.retrysafe.inbox.RetryReason;
import io.retrysafe.kafka.KafkaInbox;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.transaction.TransactionStatus;

/**
 * A batch listener's call, each record's effect once: the records go to the listener in runs, each
 * run in one transaction in which the inbox takes every record of the run (its key claimed), the
 * listener is called once with the records the inbox let through (not processed before), and their
 * keys commit with the listener's writes. A run ends before a record whose id another record of the
 * run already has (so that the copy is decided against the committed first), and at a record the
 * inbox refuses.
 *
 * <p>Whatever cannot pass is thrown as a {@link BatchListenerFailedException} naming the record, so
 * that Spring Kafka's {@code DefaultErrorHandler} commits the offsets of the records before it
 * (their transactions committed), retries or recovers that record, and redelivers those after it.
 * When the listener throws, the run rolls back and its records are taken again one per transaction,
 * as a record listener's are: those before the failing one commit, and the failing one is named.
 */
final class KafkaBatchInbox {
    private static final System.Logger LOG = System.getLogger(KafkaBatchInbox.class.getName());

    private final KafkaInboxAdvice advice;
    private final KafkaInboxAdvice.Inboxes in;
    private final MethodInvocation invocation;
    private final String group;
    private final boolean pollResult;

    KafkaBatchInbox(KafkaInboxAdvice advice, KafkaInboxAdvice.Inboxes in, MethodInvocation invocation, String group) {
        this.advice = advice;
        this.in = in;
        this.invocation = invocation;
        this.group = group;
        this.pollResult = invocation.getArguments()[0] instanceof ConsumerRecords<?, ?>;
    }

    /** The records of the call, in the order the container gave them. */
    static List<ConsumerRecord<?, ?>> records(Object batch) {
        List<ConsumerRecord<?, ?>> records = new ArrayList<>();
        if (batch instanceof ConsumerRecords<?, ?> polled) {
            polled.forEach(records::add);
        } else {
            for (Object element : (List<?>) batch) {
                records.add((ConsumerRecord<?, ?>) element);
            }
        }
        return records;
    }

    void process(List<ConsumerRecord<?, ?>> records) throws Throwable {
        int from = 0;
        while (from < records.size()) {
            List<ConsumerRecord<?, ?>> run = new ArrayList<>();
            Set<String> ids = new HashSet<>();
            for (int i = from; i < records.size(); i++) {
                String id = advice.messageId(in, records.get(i));
                if (id != null && !ids.add(id)) {
                    break;
                }
                run.add(records.get(i));
            }
            Run taken = new Run(run);
            try {
                taken.take();
                from += taken.passed;
            } catch (ListenerFailed failed) {
                LOG.log(Level.DEBUG, () -> "the listener failed on a run of " + run.size() + " records from "
                        + KafkaInbox.position(run.get(0)) + "; taking them one per transaction");
                for (ConsumerRecord<?, ?> record : run) {
                    KafkaInboxAdvice.Listener listener = new KafkaInboxAdvice.Listener(() -> callListener(List.of(record)),
                            false);
                    InboxResult result = advice.process(in, in.record(), group, record, listener);
                    if (!KafkaInboxAdvice.isPassed(in, result)) {
                        throw failed(listener.failure != null ? listener.failure
                                : KafkaInboxAdvice.refusal(in, record, result), record);
                    }
                }
                from += run.size(); // every record of the run taken alone
            }
        }
    }

    /** One run: one transaction, one call of the listener. */
    private final class Run {
        final List<ConsumerRecord<?, ?>> records;
        final List<ConsumerRecord<?, ?>> claimed = new ArrayList<>();
        /** Records the run is done with: taken into its transaction, or skipped as replays. */
        int passed;
        Throwable listenerFailure;

        Run(List<ConsumerRecord<?, ?>> records) {
            this.records = records;
        }

        /** @throws ListenerFailed the listener threw: everything of the run rolled back */
        void take() throws Throwable {
            TransactionStatus status;
            try {
                status = in.transactionManager().getTransaction(SpringInboxTransactions.definition(
                        KafkaInbox.SCOPE_PREFIX + group + ":" + records.get(0).topic()));
            } catch (RuntimeException e) {
                throw failed(e, records.get(0)); // nothing ran: from this record on, again
            }
            RuntimeException refusal;
            try {
                refusal = takeFrom(0);
            } catch (Throwable t) {
                in.transactionManager().rollback(status);
                throw t;
            }
            if (claimed.isEmpty()) {
                in.transactionManager().rollback(status); // replays and a refusal wrote nothing
            } else {
                try {
                    in.transactionManager().commit(status);
                } catch (RuntimeException e) {
                    throw failed(new StoreUnavailableException(in.record().engine().store().name(),
                            in.record().engine().policy().retryAfter(), "the transaction of " + claimed.size()
                            + " records from " + KafkaInbox.position(records.get(0)) + " did not commit: "
                            + e.getMessage(), e), records.get(0));
                }
            }
            if (refusal != null) {
                throw failed(refusal, records.get(passed));
            }
        }

        /**
         * Takes record {@code i} and, inside its claim, the ones after it; the listener runs once inside
         * the last claim. Returns the refusal that ended the run early, with {@link #passed} at its record.
         */
        private RuntimeException takeFrom(int i) throws Throwable {
            for (int next = i; next < records.size(); next++) {
                ConsumerRecord<?, ?> record = records.get(next);
                int after = next + 1;
                RuntimeException[] inner = new RuntimeException[1];
                InboxResult result = advice.process(in, in.joined(), group, record, (connection, attempt) -> {
                    claimed.add(record);
                    inner[0] = takeFromInside(after);
                });
                if (result instanceof InboxResult.Processed) {
                    return inner[0]; // everything after it was taken inside its claim
                } else if (result instanceof InboxResult.DeadLetter dead && dead.reason()
                        == DeadLetterReason.HANDLER_FAILED) {
                    throw new ListenerFailed(listenerFailure);
                } else if (KafkaInboxAdvice.isPassed(in, result)) {
                    passed = after; // a replay, or a refusal the inbox dead-lettered itself
                    continue;
                } else if (result instanceof InboxResult.RetryLater later
                        && later.reason() == RetryReason.STORE_UNAVAILABLE) {
                    throw failed(KafkaInboxAdvice.refusal(in, record, result), records.get(0));
                }
                passed = next;
                callListener();
                return KafkaInboxAdvice.refusal(in, record, result);
            }
            passed = records.size();
            callListener();
            return null;
        }

        private RuntimeException takeFromInside(int i) throws Exception {
            try {
                return takeFrom(i);
            } catch (Exception | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        private void callListener() throws Throwable {
            if (claimed.isEmpty()) {
                return;
            }
            try {
                KafkaBatchInbox.this.callListener(claimed);
            } catch (Exception e) {
                listenerFailure = e;
                throw e;
            }
        }
    }

    private void callListener(List<ConsumerRecord<?, ?>> records) throws Throwable {
        Object[] args = invocation.getArguments().clone();
        args[0] = pollResult ? consumerRecords(records) : new ArrayList<>(records);
        try {
            ((ProxyMethodInvocation) invocation).invocableClone(args).proceed();
        } catch (BatchListenerFailedException e) {
            // The records are taken again one by one: the record it names is not needed.
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static ConsumerRecords<?, ?> consumerRecords(List<ConsumerRecord<?, ?>> records) {
        Map<TopicPartition, List<ConsumerRecord>> byPartition = new LinkedHashMap<>();
        for (ConsumerRecord<?, ?> record : records) {
            byPartition.computeIfAbsent(new TopicPartition(record.topic(), record.partition()), tp -> new ArrayList<>())
                    .add(record);
        }
        return new ConsumerRecords(byPartition);
    }

    private static BatchListenerFailedException failed(Throwable cause, ConsumerRecord<?, ?> record) {
        // The dead-letter headers name this exception's class: the message names the cause's.
        return new BatchListenerFailedException(KafkaInbox.position(record) + ": " + cause.getClass().getName()
                + ": " + cause.getMessage(), cause, record);
    }

    /** The listener's exception, carried out of the run's claims (which it rolled back). */
    private static final class ListenerFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ListenerFailed(Throwable cause) {
            super(cause);
        }
    }
}
