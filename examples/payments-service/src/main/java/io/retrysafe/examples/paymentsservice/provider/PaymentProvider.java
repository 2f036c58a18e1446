package io.retrysafe.examples.paymentsservice.provider;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A card payment provider, as small as the checkout needs: the service calls it over HTTP, and it
 * deduplicates on its own {@code Idempotency-Key} request header, as real providers do. JDK only, records
 * in memory, so that a test runs it as a process of its own ({@link #main}) that outlives the service.
 *
 * <ul>
 * <li>{@code POST /charges} {@code {"card","amount"}} → {@code 201 {"id","amount","status":"succeeded"}}; card
 * {@value #DECLINED_CARD} → {@code 402 {"error":"card_declined"}}. The same key answers the same again; the
 * same key with another body → {@code 422}; a duplicate of a key still being processed waits for it up to
 * {@value #IN_FLIGHT_WAIT_MILLIS} ms, then gets {@code 409}.</li>
 * <li>{@code POST /refunds} {@code {"charge"}} → {@code 201 {"id","charge","amount"}}, idempotent by key too; an
 * unknown charge → {@code 404}; a charge refunded under another key → {@code 400}.</li>
 * <li>{@code GET /charges} → every charge with its key and whether it was refunded;
 * {@code GET /charges?idempotency_key=K} → the charge made under {@code K} (0 or 1), or {@code 409} while a
 * request with that key is being processed.</li>
 * <li>{@code POST /admin/faults} {@code {"mode","count","seconds","card"}}: the next {@code count} charges (of
 * {@code card} only, if given) fail ({@code fail}: {@code 500}, nothing recorded), are made but answered only
 * after {@code seconds} ({@code hang}: the charge exists while its request is held open) or are made only after
 * {@code seconds} ({@code slow}: the key is in flight meanwhile). {@code DELETE /admin/faults} clears them;
 * {@code GET /admin/requests?card=C} counts the requests of card {@code C} (of every card without it) held or
 * delayed now.</li>
 * </ul>
 */
public final class PaymentProvider implements AutoCloseable {
    public static final String DECLINED_CARD = "4000000000000002";
    static final long IN_FLIGHT_WAIT_MILLIS = 1_000;

    private final HttpServer server;
    private final ExecutorService executor = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "payment-provider");
        t.setDaemon(true);
        return t;
    });
    private final Map<String, Entry> charges = new ConcurrentHashMap<>();
    private final Map<String, Entry> refunds = new ConcurrentHashMap<>();
    /** Charges in the order they were made. */
    private final List<Charge> made = new ArrayList<>();
    private final List<Fault> faults = new ArrayList<>();
    private final AtomicLong ids = new AtomicLong();
    /** Charge requests held open or delayed now, by card. */
    private final Map<String, AtomicInteger> held = new ConcurrentHashMap<>();

    private PaymentProvider(HttpServer server) {
        this.server = server;
    }

    /** Starts the provider on {@code port} of the loopback address (0: a free one). */
    public static PaymentProvider start(int port) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 64);
        PaymentProvider provider = new PaymentProvider(server);
        server.createContext("/", provider::handle);
        server.setExecutor(provider.executor);
        server.start();
        return provider;
    }

    /** {@code PaymentProvider [port [ready-file]]}: serves until killed; writes its port to the ready file. */
    public static void main(String[] args) throws IOException {
        PaymentProvider provider = start(args.length > 0 ? Integer.parseInt(args[0]) : 0);
        System.out.println("payment provider on " + provider.url());
        if (args.length > 1) {
            Path target = Path.of(args[1]).toAbsolutePath();
            Path tmp = Files.createTempFile(target.getParent(), target.getFileName().toString(), ".tmp");
            Files.writeString(tmp, Integer.toString(provider.port()), StandardCharsets.US_ASCII);
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public String url() {
        return "http://127.0.0.1:" + port();
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }

    /** An answer: status and JSON body. */
    record Answer(int status, String body) {
    }

    /** One key's request: its body, and its answer once there is one. */
    private record Entry(String body, CompletableFuture<Answer> answer) {
    }

    private static final class Charge {
        final String id;
        final String key;
        final String card;
        final long amount;
        volatile String refundedBy;

        Charge(String id, String key, String card, long amount) {
            this.id = id;
            this.key = key;
            this.card = card;
            this.amount = amount;
        }

        String json() {
            return "{\"id\":\"" + id + "\",\"key\":\"" + key + "\",\"card\":\"" + card + "\",\"amount\":" + amount
                    + ",\"status\":\"succeeded\",\"refunded\":" + (refundedBy != null) + "}";
        }
    }

    private static final class Fault {
        final String mode;
        final String card;
        final long seconds;
        int left;

        Fault(String mode, String card, long seconds, int left) {
            this.mode = mode;
            this.card = card;
            this.seconds = seconds;
            this.left = left;
        }
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String method = exchange.getRequestMethod();
            String path = exchange.getRequestURI().getPath();
            String body = read(exchange.getRequestBody());
            Answer answer;
            if (method.equals("POST") && path.equals("/charges")) {
                answer = charge(exchange.getRequestHeaders().getFirst("Idempotency-Key"), body);
            } else if (method.equals("POST") && path.equals("/refunds")) {
                answer = refund(exchange.getRequestHeaders().getFirst("Idempotency-Key"), body);
            } else if (method.equals("GET") && path.equals("/charges")) {
                answer = list(exchange.getRequestURI().getQuery());
            } else if (method.equals("POST") && path.equals("/admin/faults")) {
                answer = addFault(body);
            } else if (method.equals("DELETE") && path.equals("/admin/faults")) {
                synchronized (faults) {
                    faults.clear();
                }
                answer = new Answer(204, "");
            } else if (method.equals("GET") && path.equals("/admin/requests")) {
                answer = held(exchange.getRequestURI().getQuery());
            } else {
                answer = error(404, "not_found", method + " " + path);
            }
            send(exchange, answer);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            send(exchange, error(500, "internal", e.toString()));
        }
    }

    private Answer charge(String key, String body) throws InterruptedException {
        String card = member(body, "card");
        String amount = member(body, "amount");
        if (card == null || amount == null) {
            return error(400, "invalid_request", "card and amount are required");
        }
        Fault fault = takeFault(card);
        if (fault != null && fault.mode.equals("fail")) {
            return error(500, "provider_error", "try again later"); // before anything is recorded
        }
        if (key == null) {
            return error(400, "invalid_request", "Idempotency-Key is required");
        }
        Entry mine = new Entry(body, new CompletableFuture<>());
        Entry entry = charges.putIfAbsent(key, mine);
        if (entry != null) {
            return replay(entry, body);
        }
        if (fault != null && fault.mode.equals("slow")) {
            hold(card, fault.seconds); // in flight: the key is taken, nothing charged yet
        }
        Answer answer;
        if (card.equals(DECLINED_CARD)) {
            answer = error(402, "card_declined", "the card was declined");
        } else {
            Charge charge = new Charge("ch_" + ids.incrementAndGet(), key, card, Long.parseLong(amount));
            synchronized (made) {
                made.add(charge);
            }
            answer = new Answer(201, "{\"id\":\"" + charge.id + "\",\"amount\":" + charge.amount
                    + ",\"status\":\"succeeded\"}");
        }
        mine.answer.complete(answer);
        if (fault != null && fault.mode.equals("hang")) {
            hold(card, fault.seconds); // charged, and its request held open
        }
        return answer;
    }

    private Answer refund(String key, String body) throws InterruptedException {
        String chargeId = member(body, "charge");
        if (key == null || chargeId == null) {
            return error(400, "invalid_request", "Idempotency-Key and charge are required");
        }
        Entry mine = new Entry(body, new CompletableFuture<>());
        Entry entry = refunds.putIfAbsent(key, mine);
        if (entry != null) {
            return replay(entry, body);
        }
        Charge charge = find(c -> c.id.equals(chargeId));
        Answer answer;
        if (charge == null) {
            answer = error(404, "no_such_charge", "there is no charge " + chargeId);
        } else {
            synchronized (charge) {
                if (charge.refundedBy != null) {
                    answer = error(400, "charge_already_refunded", "charge " + chargeId + " was refunded");
                } else {
                    charge.refundedBy = key;
                    answer = new Answer(201, "{\"id\":\"re_" + ids.incrementAndGet() + "\",\"charge\":\"" + chargeId
                            + "\",\"amount\":" + charge.amount + "}");
                }
            }
        }
        mine.answer.complete(answer);
        return answer;
    }

    /** The answer of a key seen before: the same one, once its first request has it. */
    private Answer replay(Entry entry, String body) throws InterruptedException {
        if (!entry.body.equals(body)) {
            return error(422, "idempotency_key_reused", "this key was used with another request");
        }
        try {
            return entry.answer.get(IN_FLIGHT_WAIT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return error(409, "request_in_progress", "a request with this key is being processed");
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    private Answer list(String query) {
        String key = query != null && query.startsWith("idempotency_key=") ? query.substring(16) : null;
        if (key != null) {
            Entry entry = charges.get(key);
            if (entry != null && !entry.answer.isDone()) {
                return error(409, "request_in_progress", "a request with this key is being processed");
            }
        }
        List<String> out = new ArrayList<>();
        synchronized (made) {
            for (Charge c : made) {
                if (key == null || c.key.equals(key)) {
                    out.add(c.json());
                }
            }
        }
        return new Answer(200, "[" + String.join(",", out) + "]");
    }

    private Charge find(java.util.function.Predicate<Charge> which) {
        synchronized (made) {
            return made.stream().filter(which).findFirst().orElse(null);
        }
    }

    private Answer addFault(String body) {
        String mode = member(body, "mode");
        if (mode == null || !List.of("fail", "hang", "slow").contains(mode)) {
            return error(400, "invalid_request", "mode is fail, hang or slow");
        }
        String count = member(body, "count");
        String seconds = member(body, "seconds");
        synchronized (faults) {
            faults.add(new Fault(mode, member(body, "card"), seconds == null ? 3600 : Long.parseLong(seconds),
                    count == null ? 1 : Integer.parseInt(count)));
        }
        return new Answer(204, "");
    }

    private Fault takeFault(String card) {
        synchronized (faults) {
            for (Fault f : faults) {
                if (f.left > 0 && (f.card == null || f.card.equals(card))) {
                    f.left--;
                    return f;
                }
            }
            return null;
        }
    }

    private void hold(String card, long seconds) throws InterruptedException {
        AtomicInteger count = held.computeIfAbsent(card, c -> new AtomicInteger());
        count.incrementAndGet();
        try {
            Thread.sleep(seconds * 1000);
        } finally {
            count.decrementAndGet();
        }
    }

    /** {@code {"held":n}}: the requests held now, of the card in {@code card=…} or of every card. */
    private Answer held(String query) {
        String card = query != null && query.startsWith("card=") ? query.substring(5) : null;
        int n = card != null ? held.getOrDefault(card, new AtomicInteger()).get()
                : held.values().stream().mapToInt(AtomicInteger::get).sum();
        return new Answer(200, "{\"held\":" + n + "}");
    }

    private static String member(String json, String name) {
        return FlatJson.member(json, name);
    }

    private static Answer error(int status, String code, String message) {
        return new Answer(status, "{\"error\":\"" + code + "\",\"message\":\"" + message.replace("\"", "'") + "\"}");
    }

    private static String read(InputStream in) throws IOException {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }

    private static void send(HttpExchange exchange, Answer answer) throws IOException {
        byte[] bytes = answer.body.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > 0) {
            exchange.getResponseHeaders().set("Content-Type", "application/json");
        }
        exchange.sendResponseHeaders(answer.status, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }
}
