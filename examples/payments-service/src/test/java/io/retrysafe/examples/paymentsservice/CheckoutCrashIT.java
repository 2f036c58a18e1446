package io.retrysafe.examples.paymentsservice;

import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.balance;
import static io.retrysafe.examples.paymentstesting.PaymentsDatabase.payments;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.retrysafe.examples.paymentsservice.provider.PaymentProvider;
import io.retrysafe.examples.paymentsservice.provider.ProviderAdmin;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checkouts under crashes: the service (a real process) dies at every step boundary and inside the call to the
 * payment provider (a process of its own, which outlives it), by its fault hook ({@code payments.checkout.halt-at})
 * and by SIGKILL while the provider holds the charge request open or has not charged yet. Several clients each
 * retry their own checkout (same key, same body) against whichever instance is up, until they get a final answer.
 * Then checkouts whose clients gave up are left to the completer. What is asserted comes from the provider's charges
 * and the service's tables, not from the answers: each checkout charged at most once and booked at most once, and in
 * the end either charged and booked, or not charged (or refunded) and its hold given back.
 */
class CheckoutCrashIT {
    private static final Duration START = Duration.ofSeconds(180);
    private static final Duration CLIENTS = Duration.ofMinutes(5);
    private static final int FRESH_PER_LIFE = 3;
    private static final String COMPLETER = "--retrysafe.phases.completer.enabled=true";

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final ExecutorService clients = Executors.newCachedThreadPool();
    private final List<ServiceProcess> processes = new ArrayList<>();
    /** The port of the instance up now; 0 while there is none. */
    private volatile int port;
    private int lives;

    /** Kept when the test fails: the logs of the provider and of every instance. */
    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    Path dir;

    private ServiceProcess providerProcess;
    private ProviderAdmin provider;

    @AfterEach
    void stop() {
        clients.shutdownNow();
        processes.forEach(ServiceProcess::close);
    }

    private ServiceProcess service(String... extra) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(List.of(ServiceDatabase.arguments()));
        if (List.of(extra).contains(COMPLETER)) {
            args.remove(ServiceDatabase.NO_COMPLETER);
        }
        args.addAll(List.of("--payments.provider.url=" + provider.url(), "--retrysafe.policy.lease-ttl=3s",
                "--logging.level.io.retrysafe=INFO"));
        args.addAll(List.of(extra));
        ServiceProcess service = ServiceProcess.start(dir, "life-" + ++lives, Map.of(), args.toArray(String[]::new));
        processes.add(service);
        port = service.awaitReady(START);
        return service;
    }

    private CheckoutIntent intent(String card) throws Exception {
        return CheckoutIntent.fresh(100 + lives, card);
    }

    private HttpRequest request(int to, CheckoutIntent intent) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + to + "/checkouts")).timeout(Duration.ofSeconds(60))
                .header("Authorization", ServiceITSupport.basic(ServiceITSupport.ALICE))
                .header("Content-Type", "application/json").header("Idempotency-Key", intent.key())
                .POST(HttpRequest.BodyPublishers.ofString(intent.body())).build();
    }

    /** A client that retries its intent until it gets a final answer: not 409 in progress, not 503, not a cut. */
    private CompletableFuture<HttpResponse<String>> retryUntilFinal(CheckoutIntent intent) {
        return CompletableFuture.supplyAsync(() -> {
            long deadline = System.nanoTime() + CLIENTS.toNanos();
            while (System.nanoTime() < deadline) {
                int to = port;
                try {
                    if (to != 0) {
                        HttpResponse<String> answer = http.send(request(to, intent), HttpResponse.BodyHandlers.ofString());
                        if (!retryable(answer)) {
                            return answer;
                        }
                    }
                    // As a client does: after a cut or a 409/503, wait (Retry-After is 1 s here), then the same again.
                    Thread.sleep(to == 0 ? 100 : 500);
                } catch (IOException e) {
                    pause(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            throw new AssertionError("no final answer for " + intent + " within " + CLIENTS);
        }, clients);
    }

    private static boolean retryable(HttpResponse<String> answer) {
        return answer.statusCode() == 503 || answer.statusCode() == 409 && answer.body().contains("request-in-progress");
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A client that sends its intent once, to an instance that dies on it, and gives up. */
    private void sendOnceAndGiveUp(CheckoutIntent intent) {
        try {
            http.send(request(port, intent), HttpResponse.BodyHandlers.ofString());
            throw new AssertionError("the service answered " + intent + " instead of halting at its hook");
        } catch (IOException expected) {
            // the instance died with the request
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String keyStatus(CheckoutIntent intent) throws Exception {
        return PaymentsDatabase.queryLong("SELECT count(*) FROM retrysafe_record WHERE idem_key = ? AND status = "
                + "'COMPLETED'", intent.key()) == 1 ? "COMPLETED" : "NOT COMPLETED";
    }

    @Test
    void everyCheckoutIsChargedAtMostOnceAndEndsBookedOrGivenBack() throws Exception {
        providerProcess = ServiceProcess.provider(dir, "provider");
        processes.add(providerProcess);
        provider = new ProviderAdmin("http://127.0.0.1:" + providerProcess.awaitReady(START));

        List<CheckoutIntent> intents = new ArrayList<>();
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();

        // 1. Killed by the fault hook at every step boundary and inside the charge, under concurrent clients.
        for (String hook : List.of("after-reserve", "before-charge", "inside-charge", "after-charge", "after-book")) {
            ServiceProcess life = service("--payments.checkout.halt-at=" + hook);
            for (int i = 0; i < FRESH_PER_LIFE; i++) {
                CheckoutIntent intent = intent(hook.equals("after-charge") && i == 0 ? PaymentProvider.DECLINED_CARD
                        : CheckoutIntent.newCard());
                intents.add(intent);
                answers.add(retryUntilFinal(intent));
            }
            assertThat(life.awaitExit(Duration.ofMinutes(2))).as("halted by the hook at " + hook + ":\n" + life.log())
                    .isEqualTo(137);
            port = 0;
        }

        // 2. SIGKILL while the provider holds a charged request open, and while it has a key in flight, uncharged.
        for (String mode : List.of("hang", "slow")) {
            ServiceProcess life = service();
            CheckoutIntent held = null;
            for (int i = 0; i < FRESH_PER_LIFE; i++) {
                CheckoutIntent intent = intent(CheckoutIntent.newCard());
                if (i == 0) {
                    held = intent;
                    provider.fault(mode, 1, mode.equals("hang") ? 20 : 6, intent.card());
                }
                intents.add(intent);
                answers.add(retryUntilFinal(intent));
            }
            String card = held.card();
            await().atMost(Duration.ofMinutes(1)).until(() -> provider.held(card) > 0);
            // hang: charged, its request still open; slow: its key in flight at the provider, nothing charged yet.
            assertThat(provider.chargesOf(card)).hasSize(mode.equals("hang") ? 1 : 0);
            port = 0;
            life.kill();
        }

        // 3. An instance that stays up: every client gets its final answer.
        ServiceProcess last = service();
        CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(CLIENTS.toMillis(), TimeUnit.MILLISECONDS);
        for (int i = 0; i < intents.size(); i++) {
            CheckoutIntent intent = intents.get(i);
            HttpResponse<String> answer = answers.get(i).join();
            assertThat(answer.statusCode()).as(intent + ": " + answer.body() + "\n" + last.log())
                    .isEqualTo(intent.declined() ? 402 : 201);
            assertThat(ServiceDatabase.holds(intent.account(), null)).as("reserved once: " + intent).isEqualTo(1);
            assertThat(ServiceDatabase.holds(intent.account(), intent.declined() ? "RELEASED" : "BOOKED")).isEqualTo(1);
            assertThat(payments(intent.account())).as("booked once: " + intent).isEqualTo(intent.declined() ? 0 : 1);
            if (!intent.declined()) {
                assertThat(provider.chargesOf(intent.card())).as("charged once: " + intent).hasSize(1);
            }
        }
        port = 0;
        last.close();

        // 4. Clients that give up after their instance died with their request, at each point.
        Map<String, CheckoutIntent> gaveUp = new java.util.LinkedHashMap<>();
        for (String hook : List.of("after-reserve", "inside-charge", "after-charge", "after-book")) {
            ServiceProcess life = service("--payments.checkout.halt-at=" + hook);
            CheckoutIntent intent = intent(CheckoutIntent.newCard());
            sendOnceAndGiveUp(intent);
            assertThat(life.awaitExit(Duration.ofMinutes(1))).as(life.log()).isEqualTo(137);
            port = 0;
            gaveUp.put(hook, intent);
            intents.add(intent);
        }
        assertThat(provider.chargesOf(gaveUp.get("inside-charge").card())).as("charged before the crash").hasSize(1);
        assertThat(provider.chargesOf(gaveUp.get("after-charge").card())).hasSize(1);
        // The provider refuses two of them on the completer's attempt: it cannot go forward, and compensates.
        provider.fault("fail", 100, 0, gaveUp.get("after-reserve").card());
        provider.fault("fail", 100, 0, gaveUp.get("inside-charge").card());

        // 5. The completer, on an instance where it runs often and takes over what was idle 2 s.
        ServiceProcess completing = service(COMPLETER, "--retrysafe.phases.completer.interval=500ms",
                "--retrysafe.phases.completer.idle-for=2s");
        for (CheckoutIntent intent : gaveUp.values()) {
            await(intent + " completed").atMost(Duration.ofMinutes(1))
                    .until(() -> keyStatus(intent).equals("COMPLETED"));
        }
        provider.clearFaults();

        CheckoutIntent cancelledNothingCharged = gaveUp.get("after-reserve");
        CheckoutIntent cancelledRefunded = gaveUp.get("inside-charge");
        assertThat(ServiceDatabase.holds(cancelledNothingCharged.account(), "CANCELLED")).isEqualTo(1);
        assertThat(provider.chargesOf(cancelledNothingCharged.card())).isEmpty();
        assertThat(ServiceDatabase.holds(cancelledRefunded.account(), "CANCELLED")).isEqualTo(1);
        assertThat(provider.chargesOf(cancelledRefunded.card())).singleElement()
                .satisfies(c -> assertThat(c.refunded()).isTrue());
        for (String forward : List.of("after-charge", "after-book")) {
            assertThat(ServiceDatabase.holds(gaveUp.get(forward).account(), "BOOKED")).as(forward).isEqualTo(1);
        }
        // A late retry gets what the completer stored.
        for (Map.Entry<String, CheckoutIntent> late : gaveUp.entrySet()) {
            HttpResponse<String> replay = http.send(request(port, late.getValue()), HttpResponse.BodyHandlers.ofString());
            boolean cancelled = late.getKey().equals("after-reserve") || late.getKey().equals("inside-charge");
            assertThat(replay.statusCode()).as(late.getKey() + ": " + replay.body()).isEqualTo(cancelled ? 402 : 201);
            assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            if (cancelled) {
                assertThat(replay.body()).contains("\"type\":\"/problems/checkout-cancelled\"");
            }
        }

        // 6. The ground truth, for every checkout of the test.
        List<ProviderAdmin.Charge> charges = provider.charges();
        for (CheckoutIntent intent : intents) {
            if (intent.declined()) {
                continue;
            }
            List<ProviderAdmin.Charge> mine = charges.stream().filter(c -> c.card().equals(intent.card())).toList();
            long booked = payments(intent.account());
            assertThat(mine).as("charged at most once: " + intent).hasSizeLessThanOrEqualTo(1);
            assertThat(booked).as("booked at most once: " + intent).isLessThanOrEqualTo(1);
            assertThat(ServiceDatabase.holds(intent.account(), "HELD")).as("nothing left held: " + intent).isZero();
            assertThat(balance(intent.account())).isEqualTo(CheckoutIntent.BALANCE - booked * intent.amount());
            boolean charged = mine.size() == 1 && !mine.get(0).refunded();
            if (charged) {
                assertThat(booked).as("charged, so booked: " + intent).isEqualTo(1);
                assertThat(ServiceDatabase.holds(intent.account(), "BOOKED")).isEqualTo(1);
            } else {
                assertThat(booked).as("not charged (or refunded), so not booked: " + intent).isZero();
                assertThat(ServiceDatabase.holds(intent.account(), "CANCELLED")).as(intent.toString()).isEqualTo(1);
            }
        }
    }
}
