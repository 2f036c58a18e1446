package io.retrysafe.client;

import io.retrysafe.Backoff;
import io.retrysafe.IdempotencyKeys;
import io.retrysafe.KeyRules;
import io.retrysafe.Sleeper;
import io.retrysafe.internal.Hex;
import io.retrysafe.internal.Require;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.BodySubscribers;
import java.net.http.HttpTimeoutException;
import java.time.Clock;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.temporal.ChronoField;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLHandshakeException;

/**
 * Sends a request with an {@code Idempotency-Key} and retries it until it is answered for good.
 * One call is one intent: it has <em>one</em> key, sent unchanged on every attempt, so the server
 * runs the operation at most once however many attempts reach it, and a retry of an attempt whose
 * answer was lost gets that answer replayed ({@link ClientResponse#replayed()}).
 *
 * <pre>{@code
 * RetryingClient client = RetryingClient.of(HttpClient.newHttpClient());
 * ClientResponse<String> created = client.send(
 *         HttpRequest.newBuilder(URI.create("https://api.example.com/payments"))
 *                 .POST(BodyPublishers.ofString(json)).header("Content-Type", "application/json").build(),
 *         BodyHandlers.ofString());                 // a new UUIDv7 key, the same on every attempt
 * }</pre>
 *
 * <h2>What is retried</h2>
 *
 * <ul>
 * <li>{@link IOException}s: connection refused or reset, connect and request time-outs, a response
 *     lost half-way. The server may have done the work before the failure: that is what the key is
 *     for; the retry is answered from the stored response. Not retried: a failed TLS handshake
 *     ({@link SSLHandshakeException}), which a retry will not heal.
 * <li>{@code 409} (the first attempt is still in flight), {@code 429} (rate limited), {@code 502},
 *     {@code 503} (the server or its idempotency store is unavailable; nothing ran), {@code 504}:
 *     {@link #DEFAULT_RETRY_STATUSES}. A server that implements RetrySafe answers {@code 5xx} with the
 *     key released, so {@code 500} may be added with {@link Builder#retryStatuses}.
 * <li>Never retried, whatever is configured: every other {@code 4xx} ({@code 400}, {@code 401}, {@code 403},
 *     {@code 404}, {@code 412}, {@code 422}, {@code 428}, …). These are final answers about this request:
 *     the same request with the same key gets the same answer, and a new key would be a new intent.
 * </ul>
 * The response of the last attempt is returned whatever its status, also when retries ran out; an
 * {@link IOException} of the last attempt is thrown, with those of the earlier attempts
 * {@linkplain Throwable#getSuppressed() suppressed}.
 *
 * <h2>How long it waits</h2>
 *
 * Exponential backoff with full jitter: before attempt {@code n + 1} the client waits a uniformly
 * random time in {@code [0, min(maxBackoff, initialBackoff × multiplier^(n-1))]}, so clients that
 * failed together do not come back together. When the answer carries {@code Retry-After} (seconds, or
 * an HTTP-date), that time is a floor: the wait is {@code Retry-After} plus the jittered backoff,
 * capped by {@code maxBackoff}. The cap wins over the server's hint on purpose: a hint of an hour
 * (from a proxy, or a misconfigured server) must not park the caller's thread for an hour; a caller
 * that wants to follow long hints raises {@code maxBackoff}. With a {@link Builder#deadline deadline},
 * no wait reaches past it (the last answer is returned instead) and every attempt's time-out is cut
 * to the time left.
 *
 * <p>The request's body publisher must be able to publish its body more than once (those of
 * {@code BodyPublishers.ofString}, {@code ofByteArray}, {@code ofFile} can). The body of an answer that
 * is retried is discarded; only the last attempt's body reaches the caller's handler.
 *
 * <p>Use it only with servers that honour {@code Idempotency-Key}: against one that ignores it, a
 * retried {@code POST} runs twice.
 */
public final class RetryingClient {
    /** The request header that carries the key. */
    public static final String HEADER = "Idempotency-Key";
    /** The response header with which a server marks a replayed response. */
    public static final String REPLAYED_HEADER = "Idempotent-Replayed";

    public static final int DEFAULT_MAX_ATTEMPTS = 5;
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(100);
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(5);
    public static final double DEFAULT_MULTIPLIER = 2.0;
    /** Statuses retried by default: in flight, rate limited, bad gateway, unavailable, gateway time-out. */
    public static final Set<Integer> DEFAULT_RETRY_STATUSES = Collections.unmodifiableSet(new TreeSet<>(
            List.of(409, 429, 502, 503, 504)));
    /** The most attempts one call may make. */
    public static final int MAX_ATTEMPTS = 100;

    private static final System.Logger LOG = System.getLogger(RetryingClient.class.getName());
    /** The {@code 4xx} statuses that ask for a retry; every other {@code 4xx} is final. */
    private static final Set<Integer> RETRYABLE_4XX = Set.of(408, 409, 425, 429);

    private final HttpClient http;
    private final int maxAttempts;
    private final Backoff backoff;
    private final Duration deadline;
    private final Set<Integer> retryStatuses;
    private final Sleeper sleeper;
    private final Clock clock;

    private RetryingClient(Builder b, Backoff backoff) {
        this.http = b.http;
        this.maxAttempts = b.maxAttempts == null ? DEFAULT_MAX_ATTEMPTS : b.maxAttempts;
        this.backoff = backoff;
        this.deadline = b.deadline;
        this.retryStatuses = b.retryStatuses == null ? DEFAULT_RETRY_STATUSES : b.retryStatuses;
        this.sleeper = b.sleeper == null ? Sleeper.THREAD_SLEEP : b.sleeper;
        this.clock = b.clock == null ? Clock.systemUTC() : b.clock;
    }

    /** A client with the defaults. */
    public static RetryingClient of(HttpClient httpClient) {
        return builder(httpClient).build();
    }

    public static Builder builder(HttpClient httpClient) {
        return new Builder(httpClient);
    }

    /**
     * Sends the request under a new key ({@link IdempotencyKeys#uuidV7()}), the same on every attempt of
     * this call. Keep {@link ClientResponse#key()} if the intent may have to be retried after this call
     * gave up (and pass it to {@link #send(HttpRequest, String, BodyHandler)}).
     *
     * @throws IllegalArgumentException if the request already has an {@code Idempotency-Key} header
     * @throws IOException              the last attempt's failure, when retries ran out or it is not retryable
     * @throws HttpTimeoutException     also when the deadline passed before a retry could be sent
     */
    public <T> ClientResponse<T> send(HttpRequest request, BodyHandler<T> responseBodyHandler)
            throws IOException, InterruptedException {
        return send(request, IdempotencyKeys.uuidV7(), responseBodyHandler);
    }

    /**
     * Sends the request under the given key: one the caller kept for this intent (to retry it after a
     * restart), or one derived from it ({@link IdempotencyKeys#intent}).
     *
     * @param key checked against {@link KeyRules#DEFAULT}; sent bare, or as a quoted string when it holds
     *            a space, a tab, a comma, a quote or a backslash
     * @throws io.retrysafe.InvalidKeyException if the key breaks {@link KeyRules#DEFAULT}
     * @throws IllegalArgumentException         if the request already has an {@code Idempotency-Key} header
     */
    public <T> ClientResponse<T> send(HttpRequest request, String key, BodyHandler<T> responseBodyHandler)
            throws IOException, InterruptedException {
        Require.notNull(request, "request");
        Require.notNull(responseBodyHandler, "responseBodyHandler");
        KeyRules.DEFAULT.validate(key);
        if (request.headers().firstValue(HEADER).isPresent()) {
            throw new IllegalArgumentException("request must not have an " + HEADER + " header (the client sets it), "
                    + "but had one; pass its value as the key instead");
        }
        String headerValue = headerValue(key);
        long start = clock.millis();
        List<IOException> failures = new ArrayList<>();
        String lastAnswer = null;
        for (int attempt = 1; ; attempt++) {
            HttpRequest.Builder builder = HttpRequest.newBuilder(request, (name, value) -> true).header(HEADER, headerValue);
            if (deadline != null) {
                Duration left = deadline.minusMillis(clock.millis() - start);
                if (attempt > 1 && (left.isNegative() || left.isZero())) {
                    HttpTimeoutException e = new HttpTimeoutException("deadline of " + deadline + " passed before "
                            + "attempt " + attempt + " (attempt " + (attempt - 1) + " got " + lastAnswer + ", key "
                            + digest(key) + ")");
                    failures.forEach(e::addSuppressed);
                    throw e;
                }
                if (request.timeout().map(t -> t.compareTo(left) > 0).orElse(true) && !left.isNegative()
                        && !left.isZero()) {
                    builder.timeout(left);
                }
            }
            int n = attempt;
            AtomicReference<Duration> retryIn = new AtomicReference<>();
            BodyHandler<T> handler = info -> {
                Duration delay = retryDelay(n, start, info.statusCode(), info.headers());
                if (delay == null) {
                    return responseBodyHandler.apply(info);
                }
                retryIn.set(delay);
                return BodySubscribers.replacing(null);
            };
            HttpResponse<T> response;
            try {
                response = http.send(builder.build(), handler);
            } catch (IOException e) {
                Duration delay = retryable(e) ? delay(n, start, null) : null;
                if (delay == null) {
                    failures.forEach(e::addSuppressed);
                    throw e;
                }
                failures.add(e);
                lastAnswer = e.getClass().getSimpleName();
                log(request.uri(), key, n, lastAnswer, delay);
                sleeper.sleep(delay);
                continue;
            }
            Duration delay = retryIn.get();
            if (delay == null) {
                return new ClientResponse<>(response, key, n, replayed(response.headers()));
            }
            lastAnswer = "status " + response.statusCode();
            log(request.uri(), key, n, lastAnswer, delay);
            sleeper.sleep(delay);
        }
    }

    public int maxAttempts() {
        return maxAttempts;
    }

    public Duration initialBackoff() {
        return backoff.initial();
    }

    public Duration maxBackoff() {
        return backoff.max();
    }

    public double multiplier() {
        return backoff.multiplier();
    }

    /** The waits between attempts: from {@code initialBackoff} up to {@code maxBackoff}, with full jitter. */
    public Backoff backoff() {
        return backoff;
    }

    public Optional<Duration> deadline() {
        return Optional.ofNullable(deadline);
    }

    public Set<Integer> retryStatuses() {
        return retryStatuses;
    }

    @Override
    public String toString() {
        return "RetryingClient[maxAttempts=" + maxAttempts + ", initialBackoff=" + backoff.initial() + ", maxBackoff="
                + backoff.max() + ", multiplier=" + backoff.multiplier() + ", deadline=" + deadline + ", retryStatuses="
                + retryStatuses + "]";
    }

    // ---- decisions

    /** How long to wait before retrying an answer with this status, or null if it is final. */
    private Duration retryDelay(int attempt, long start, int status, HttpHeaders headers) {
        if (!retryStatuses.contains(status)) {
            return null;
        }
        return delay(attempt, start, retryAfter(headers.firstValue("Retry-After").orElse(null), clock.instant()));
    }

    /** The wait after attempt {@code attempt} failed, or null if no further attempt is allowed. */
    private Duration delay(int attempt, long start, Duration retryAfter) {
        if (attempt >= maxAttempts) {
            return null;
        }
        Duration jittered = backoff.delay(attempt);
        Duration max = backoff.max();
        Duration delay = retryAfter == null ? jittered : min(max, min(max, retryAfter).plus(jittered));
        if (deadline != null && Duration.ofMillis(clock.millis() - start).plus(delay).compareTo(deadline) >= 0) {
            return null;
        }
        return delay;
    }

    private static boolean retryable(IOException e) {
        return !(e instanceof SSLHandshakeException);
    }

    private static boolean replayed(HttpHeaders headers) {
        return headers.firstValue(REPLAYED_HEADER).map(v -> v.trim().equalsIgnoreCase("true")).orElse(false);
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    // ---- Retry-After

    private static final DateTimeFormatter ASCTIME = new DateTimeFormatterBuilder().parseCaseInsensitive()
            .appendPattern("EEE MMM ppd HH:mm:ss yyyy").toFormatter(Locale.US).withZone(ZoneOffset.UTC);

    /**
     * The wait a {@code Retry-After} value asks for, or null if it is absent or malformed (then the
     * backoff alone decides). RFC 9110 §10.2.3: delay-seconds, or an HTTP-date in any of its three
     * formats (IMF-fixdate, the obsolete RFC 850 and asctime); a date in the past asks for no wait.
     */
    static Duration retryAfter(String value, Instant now) {
        if (value == null) {
            return null;
        }
        String v = value.trim();
        if (v.isEmpty()) {
            return null;
        }
        if (v.chars().allMatch(c -> c >= '0' && c <= '9')) {
            // Past 10 digits the value is centuries; any cap applies long before.
            return v.length() > 10 ? Duration.ofSeconds(9_999_999_999L) : Duration.ofSeconds(Long.parseLong(v));
        }
        Instant at = httpDate(v, now);
        if (at == null) {
            return null;
        }
        return at.isAfter(now) ? Duration.between(now, at) : Duration.ZERO;
    }

    private static Instant httpDate(String v, Instant now) {
        try {
            return ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        } catch (DateTimeException ignored) {
            // not an IMF-fixdate
        }
        try {
            return ASCTIME.parse(v, Instant::from);
        } catch (DateTimeException ignored) {
            // not asctime
        }
        try {
            // RFC 850: a two-digit year more than 50 years in the future is in the past century.
            int baseYear = now.atZone(ZoneOffset.UTC).getYear() - 49;
            DateTimeFormatter rfc850 = new DateTimeFormatterBuilder().parseCaseInsensitive()
                    .appendPattern("EEEE, dd-MMM-").appendValueReduced(ChronoField.YEAR, 2, 2, baseYear)
                    .appendPattern(" HH:mm:ss 'GMT'").toFormatter(Locale.US).withZone(ZoneOffset.UTC);
            return rfc850.parse(v, Instant::from);
        } catch (DateTimeException ignored) {
            return null;
        }
    }

    // ---- the header and logs

    /** Bare when it is a token a server reads as is (most expect a bare UUID), else an RFC 8941 string. */
    static String headerValue(String key) {
        boolean bare = key.chars().noneMatch(c -> c == ' ' || c == '\t' || c == ',' || c == '"' || c == '\\');
        if (bare) {
            return key;
        }
        StringBuilder quoted = new StringBuilder(key.length() + 8).append('"');
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == '"' || c == '\\') {
                quoted.append('\\');
            }
            quoted.append(c);
        }
        return quoted.append('"').toString();
    }

    private static String digest(String key) {
        return Hex.encode(Hex.sha256(key)).substring(0, 12);
    }

    private static void log(URI uri, String key, int attempt, String answer, Duration delay) {
        LOG.log(Level.DEBUG, () -> "RetryingClient: " + uri.getHost() + uri.getRawPath() + " (key " + digest(key)
                + "): attempt " + attempt + " got " + answer + ", retrying in " + delay.toMillis() + " ms");
    }

    /**
     * Configures a {@link RetryingClient}. Every value may be set once; {@link #build()} checks the
     * combination.
     */
    public static final class Builder {
        private final HttpClient http;
        private Integer maxAttempts;
        private Duration initialBackoff;
        private Duration maxBackoff;
        private Double multiplier;
        private Duration deadline;
        private Set<Integer> retryStatuses;
        private Sleeper sleeper;
        private Clock clock;

        private Builder(HttpClient http) {
            this.http = Require.notNull(http, "httpClient");
        }

        /** Attempts per call, the first included (5 by default); 1 means no retry. */
        public Builder maxAttempts(int maxAttempts) {
            Require.unset(this.maxAttempts, "maxAttempts");
            this.maxAttempts = Require.between(maxAttempts, 1, MAX_ATTEMPTS, "maxAttempts");
            return this;
        }

        /** The cap of the first wait (100 ms by default). */
        public Builder initialBackoff(Duration initialBackoff) {
            Require.unset(this.initialBackoff, "initialBackoff");
            this.initialBackoff = Require.positive(initialBackoff, "initialBackoff");
            return this;
        }

        /** The longest any wait may be, {@code Retry-After} included (5 s by default). */
        public Builder maxBackoff(Duration maxBackoff) {
            Require.unset(this.maxBackoff, "maxBackoff");
            this.maxBackoff = Require.positive(maxBackoff, "maxBackoff");
            return this;
        }

        /** How much the cap of the wait grows per attempt (2 by default); 1 keeps it at {@code initialBackoff}. */
        public Builder multiplier(double multiplier) {
            Require.unset(this.multiplier, "multiplier");
            if (!(multiplier >= 1.0) || Double.isInfinite(multiplier)) {
                throw new IllegalArgumentException("multiplier must be a finite number of at least 1.0, but was "
                        + multiplier);
            }
            this.multiplier = multiplier;
            return this;
        }

        /** The longest one call may take, all attempts and waits included; none by default. */
        public Builder deadline(Duration deadline) {
            Require.unset(this.deadline, "deadline");
            this.deadline = Require.positive(deadline, "deadline");
            return this;
        }

        /**
         * The statuses that are retried, replacing {@link #DEFAULT_RETRY_STATUSES}: {@code 5xx}, and of the
         * {@code 4xx} only {@code 408}, {@code 409}, {@code 425} and {@code 429}, which ask for a retry. None
         * retries network failures only.
         */
        public Builder retryStatuses(int... statuses) {
            Require.unset(this.retryStatuses, "retryStatuses");
            Require.notNull(statuses, "statuses");
            Set<Integer> set = new TreeSet<>();
            for (int status : statuses) {
                if (!(status >= 500 && status <= 599) && !RETRYABLE_4XX.contains(status)) {
                    throw new IllegalArgumentException("retryStatuses may hold 5xx, 408, 409, 425 and 429 only (other "
                            + "answers are final: the same request with the same key gets the same answer), but was "
                            + status + " in " + Arrays.toString(statuses));
                }
                set.add(status);
            }
            this.retryStatuses = Collections.unmodifiableSet(set);
            return this;
        }

        /** How the client waits between attempts; {@link Sleeper#THREAD_SLEEP} by default. */
        public Builder sleeper(Sleeper sleeper) {
            Require.unset(this.sleeper, "sleeper");
            this.sleeper = Require.notNull(sleeper, "sleeper");
            return this;
        }

        /** The clock for the deadline and for {@code Retry-After} dates; the system clock by default. */
        public Builder clock(Clock clock) {
            Require.unset(this.clock, "clock");
            this.clock = Require.notNull(clock, "clock");
            return this;
        }

        public RetryingClient build() {
            Duration initial = initialBackoff == null ? DEFAULT_INITIAL_BACKOFF : initialBackoff;
            Duration max = maxBackoff == null ? DEFAULT_MAX_BACKOFF : maxBackoff;
            if (initial.compareTo(max) > 0) {
                throw new IllegalStateException("initialBackoff must not exceed maxBackoff, but was initialBackoff="
                        + initial + ", maxBackoff=" + max);
            }
            return new RetryingClient(this, new Backoff(initial, max,
                    multiplier == null ? DEFAULT_MULTIPLIER : multiplier, Backoff.Jitter.FULL));
        }
    }
}
