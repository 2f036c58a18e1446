package io.retrysafe.faults;

import io.retrysafe.faults.PaymentClient.Answer;
import io.retrysafe.faults.PaymentClient.Intent;
import io.retrysafe.faults.PaymentClient.Kind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Clients that pay or check out, each from an account of its own, and retry each intent with its key until it
 * is answered for good: one key per intent, the same body on every attempt, retried on network errors, 408,
 * 409, 425, 429 and 5xx. Some first attempts are sent twice at once (a duplicate in flight). Every answer is
 * logged with its intent, for {@link FaultChecker}.
 *
 * <p>An intent's amount is unique within its account (1, 2, 3, … cents), so that the payments table (and the
 * checkout holds) tell which intent each row belongs to; a checkout's card is unique to its intent, so that the
 * provider's charges of a card are that intent's.
 */
final class Workload {
    /** One intent and every answer any of its attempts got, in the order they arrived. */
    static final class Log {
        final Intent intent;
        final List<Answer> answers = Collections.synchronizedList(new ArrayList<>());
        /** The answer that ended the client's retries; null while it has none (or if it never got one). */
        volatile Answer finalAnswer;

        Log(Intent intent) {
            this.intent = intent;
        }

        List<Answer> answers() {
            synchronized (answers) {
                return List.copyOf(answers);
            }
        }
    }

    private final PaymentClient client;
    private final List<String> accounts;
    private final List<Kind> kinds;
    private final long seed;
    private final double duplicateRate;
    private final List<Log> logs = Collections.synchronizedList(new ArrayList<>());
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean stopNew;
    private volatile long giveUpAtNanos = Long.MAX_VALUE;

    /** @param accounts one client per account, which sends intents of the account's kind */
    Workload(PaymentClient client, Map<String, Kind> accounts, long seed, double duplicateRate) {
        this.client = client;
        this.accounts = List.copyOf(accounts.keySet());
        this.kinds = List.copyOf(accounts.values());
        this.seed = seed;
        this.duplicateRate = duplicateRate;
    }

    void start() {
        for (int i = 0; i < accounts.size(); i++) {
            int n = i;
            Thread t = new Thread(() -> run(n), "client-" + i);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    /**
     * No new intents; the ones in flight are retried until answered or until {@code bound} passes, then
     * waits for every client to finish.
     */
    void finish(long boundMillis) throws InterruptedException {
        stopNew = true;
        giveUpAtNanos = System.nanoTime() + boundMillis * 1_000_000L;
        for (Thread t : threads) {
            t.join(boundMillis + 30_000);
            if (t.isAlive()) {
                throw new AssertionError(t.getName() + " did not finish within " + boundMillis + " ms + 30 s");
            }
        }
    }

    List<Log> logs() {
        synchronized (logs) {
            return List.copyOf(logs);
        }
    }

    private void run(int n) {
        // The clients' own choices (which intents get a duplicate, backoff jitter) come from the seed too.
        Random random = new Random(seed * 31 + n);
        String account = accounts.get(n);
        Kind kind = kinds.get(n);
        String user = n % 2 == 0 ? "alice" : "bob";
        long amount = 0;
        try {
            while (!stopNew) {
                amount++;
                Log log = new Log(new Intent(kind, UUID.randomUUID().toString(), user, account, amount,
                        kind == Kind.CHECKOUT ? card(n, amount) : null));
                logs.add(log);
                carryOut(log, random);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A card number of this client's intent {@code amount} alone: 16 digits, never the provider's declined card. */
    static String card(int client, long amount) {
        return String.format("4242%02d%010d", client, amount);
    }

    private void carryOut(Log log, Random random) throws InterruptedException {
        CompletableFuture<Answer> duplicate = random.nextDouble() < duplicateRate
                ? client.sendAsync(log.intent, 0) : null;
        for (int attempt = 1; ; attempt++) {
            Answer answer = client.send(log.intent, attempt);
            log.answers.add(answer);
            if (!answer.retryable()) {
                log.finalAnswer = answer;
                break;
            }
            if (System.nanoTime() - giveUpAtNanos > 0) {
                break; // unanswered: the checker reports it
            }
            Thread.sleep(PaymentClient.backoffMillis(attempt, random));
        }
        if (duplicate != null) {
            try {
                log.answers.add(duplicate.get(client.timeout().toSeconds() + 5, TimeUnit.SECONDS));
            } catch (ExecutionException | TimeoutException e) {
                throw new AssertionError("the duplicate's future failed: " + e, e);
            }
        }
    }
}
