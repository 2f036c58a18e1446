package io.retrysafe.http;

import io.retrysafe.Fingerprint;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.KeyRules;
import io.retrysafe.Outcome;
import io.retrysafe.OutcomeUnknownException;
import io.retrysafe.ResponseCodec;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseUnreadableException;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.internal.Hex;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.RetrySafeListener;
import java.security.Principal;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * The Idempotency-Key decisions that do not depend on the HTTP stack: the header names, which
 * problem a refused key or request gets, the fingerprint of a request, which response headers are
 * stored, how a stored response is replayed, and what each refusing outcome or failure of the engine
 * answers. The servlet filter and the WebFlux filter both answer through these, so that a client sees
 * the same answers from either.
 */
public final class HttpSemantics {
    public static final String KEY_HEADER = "Idempotency-Key";
    public static final String REPLAYED_HEADER = "Idempotent-Replayed";
    public static final String RETRY_AFTER = "Retry-After";
    /** On the replay of a response stored without its body (over the bound): the body's length in bytes. */
    public static final String BODY_OMITTED_HEADER = "Idempotent-Replay-Body-Omitted";
    /**
     * Headers replayed with a stored response unless configured otherwise. {@code content-encoding} and {@code vary}
     * describe the stored body's bytes: a compressed body replayed without them would be unreadable.
     */
    public static final Set<String> DEFAULT_REPLAYED_HEADERS = Set.of("content-type", "content-language",
            "content-encoding", "vary", "location", "etag", "last-modified", "cache-control", "link");
    /** Never stored, whatever is configured: they carry credentials or per-session state. */
    public static final Set<String> FORBIDDEN_HEADERS = HeaderCodec.NEVER_STORED;
    /** The pause a client is told when the store failed and the engine named none. */
    public static final Duration STORE_RETRY_AFTER = Duration.ofSeconds(1);
    private static final String ANONYMOUS_AUTHENTICATION =
            "org.springframework.security.authentication.AnonymousAuthenticationToken";

    private HttpSemantics() {
    }

    /** {@code names} in lower case, refused if they include credentials or cookies. */
    public static Set<String> replayedHeaders(Set<String> names) {
        Set<String> lower = new TreeSet<>();
        for (String n : Require.notNull(names, "names")) {
            String l = n.toLowerCase(Locale.ROOT);
            if (FORBIDDEN_HEADERS.contains(l)) {
                throw new IllegalArgumentException("replayedHeaders must not include credentials or cookies, "
                        + "but included " + n);
            }
            lower.add(l);
        }
        return Collections.unmodifiableSet(lower);
    }

    /** Whether a response header of this name is stored with the response: allowed, and never a credential. */
    public static boolean isStored(String name, Set<String> replayedHeaders) {
        String lower = name.toLowerCase(Locale.ROOT);
        return replayedHeaders.contains(lower) && !FORBIDDEN_HEADERS.contains(lower);
    }

    /**
     * What is stored of a response whose body went past the bound held for replay, and so went to the client
     * as it was written: its status and stored headers, no body (nor the body's {@code Content-Type}), and
     * {@value #BODY_OMITTED_HEADER} with the body's length, which tells a replay's client to fetch the resource
     * (its {@code Location}) instead. A body is never stored truncated.
     */
    public static StoredResponse withoutBody(int status, Map<String, List<String>> storedHeaders, long length) {
        Map<String, List<String>> headers = new LinkedHashMap<>(storedHeaders);
        headers.keySet().removeIf(name -> name.equalsIgnoreCase("Content-Type"));
        headers.put(BODY_OMITTED_HEADER, List.of(Long.toString(length)));
        return StoredResponse.of(status, headers, new byte[0]);
    }

    /** The problem for a key that breaks a rule: missing-key or invalid-key; member {@code rule} names the rule. */
    public static HttpAnswer keyRefused(InvalidKeyException e) {
        ProblemType problem = e.rule() == InvalidKeyException.Rule.MISSING ? ProblemType.MISSING_KEY
                : ProblemType.INVALID_KEY;
        return problem.answer(e.getMessage(), keyRuleMember(e), null);
    }

    /**
     * The answer to a request on a protected route that was refused before the filter could read it (by a
     * firewall, or by the server's own parser: control characters in a header, a path it does not allow), so
     * that its client gets a problem like every other refusal there: the invalid-key problem when its key
     * breaks a rule ({@code listener} hears it), else request-rejected.
     *
     * @param keyFieldLines the {@code Idempotency-Key} field lines the server read, possibly none
     */
    public static HttpAnswer rejected(KeyRules rules, List<String> keyFieldLines, RetrySafeListener listener) {
        try {
            rules.parseHeader(keyFieldLines);
        } catch (InvalidKeyException e) {
            if (e.rule() != InvalidKeyException.Rule.MISSING) {
                listener.onInvalidKey(e);
                return keyRefused(e);
            }
        }
        return ProblemType.REQUEST_REJECTED.answer("the request was refused before it was processed: its target, a "
                + "header or its framing is not allowed here (for example control characters in a header)", null, null);
    }

    /** The {@code rule} member of a key refusal, as encoded JSON. */
    public static String keyRuleMember(InvalidKeyException e) {
        return "\"rule\":\"" + e.rule().name().toLowerCase(Locale.ROOT) + "\"";
    }

    /** The scope of a key: the caller's, on one route, so one key is one intent on one kind of resource. */
    public static String scope(String principal, HttpRoute route) {
        return principal + "|" + route.method() + " " + route.pattern();
    }

    /**
     * The scope of an authenticated principal, or null when it names no caller: none, a name that is null or
     * blank (a token without a subject), or Spring Security's anonymous authentication, which gives every
     * anonymous caller the one name {@code anonymousUser}: their keys would be one another's.
     */
    public static String principalScope(Principal principal) {
        if (principal == null || isAnonymous(principal.getClass())) {
            return null;
        }
        String name = principal.getName();
        return name == null || name.isBlank() ? null : "principal:" + name;
    }

    /** The scope of a header's value as sent (a tenant set by a gateway), or null when it is absent or blank. */
    public static String headerScope(String name, String value) {
        return value == null || value.isBlank() ? null : "header:" + name + ":" + value;
    }

    /** The scope of a secret header (an API key): its SHA-256, never the secret; null when it is absent or blank. */
    public static String hashedHeaderScope(String value) {
        return value == null || value.isBlank() ? null : "sha256:" + Hex.encode(Hex.sha256(value));
    }

    /** The one scope of every caller, chosen explicitly for a single trusted client. */
    public static String globalScope(String name) {
        return "global:" + name;
    }

    /** By name: this module has no Spring dependency, and an application without Spring Security has no such type. */
    private static boolean isAnonymous(Class<?> type) {
        for (Class<?> t = type; t != null; t = t.getSuperclass()) {
            if (t.getName().equals(ANONYMOUS_AUTHENTICATION)) {
                return true;
            }
        }
        return false;
    }

    /** A request refused before it runs: no caller to scope its key to. */
    public static HttpAnswer noCaller() {
        return ProblemType.UNAUTHENTICATED.answer("this route scopes Idempotency-Key to the caller, and the request "
                + "has none", null, null);
    }

    /** A request refused before it runs: its body is over the bound ({@code declared} negative when unknown). */
    public static HttpAnswer tooLarge(int max, long declared) {
        return ProblemType.PAYLOAD_TOO_LARGE.answer("the body must have at most " + max + " bytes"
                + (declared > max ? ", but had " + declared : ""), null, null);
    }

    /**
     * Whether the answer to a request refused before its body was read says {@code Connection: close}: whenever the
     * request declares a body ({@code contentLength} over zero, or a {@code Transfer-Encoding}). Left open, the
     * connection either reads and discards every declared byte (a 100 MB {@code Content-Length} is 100 MB read for
     * nothing) or waits for bytes the client will not send once refused; and a container that closes it anyway
     * after the answer, without saying so, fails the keep-alive client's next request, which a client does not
     * resend when it is a POST.
     *
     * @param contentLength the declared length, negative when none
     * @param transferEncoding the request's {@code Transfer-Encoding}, null when absent
     */
    public static boolean closesUnreadBody(long contentLength, String transferEncoding) {
        return contentLength > 0 || transferEncoding != null;
    }

    /**
     * At most this many bytes of a refused body are read and discarded after the answer, before the connection
     * closes ({@link #LINGER}).
     */
    public static final long LINGER_BYTES = 1L << 20;

    /**
     * How long, at most, a front door goes on reading a body it refused before reading it, after the answer: a
     * connection closed with bytes of the request still waiting is reset, not closed, and the reset discards what
     * the client had not read yet, the answer included. A client sending its body right behind the head is still
     * sending when the refusal goes out.
     */
    public static final Duration LINGER = Duration.ofSeconds(2);

    /**
     * {@code answer} to a request refused before its body was read: with {@code Connection: close} where
     * {@link #closesUnreadBody} says.
     */
    public static HttpAnswer unreadBody(HttpAnswer answer, long contentLength, String transferEncoding) {
        if (!closesUnreadBody(contentLength, transferEncoding)) {
            return answer;
        }
        Map<String, List<String>> headers = new LinkedHashMap<>(answer.headers());
        headers.put("Connection", List.of("close"));
        return new HttpAnswer(answer.status(), headers, answer.body());
    }

    /**
     * The fingerprint of a request: its method, its normalised path with the query, the values of the route's
     * {@linkplain HttpRoute#fingerprintHeaders() fingerprinted headers}, its content type and body (its
     * {@linkplain HttpRoute#jsonMembers() JSON members}, canonical when it is JSON). {@code path}
     * is the path the route matched, so the same request spelled otherwise is the same. The route is passed, not
     * its header names, so that no front door can leave its headers out.
     *
     * @param headerValues a request header's field values in order, empty when absent
     * @throws io.retrysafe.MalformedJsonException if the body is JSON and cannot be parsed
     */
    public static Fingerprint fingerprint(HttpRoute route, String method, String path, String query,
            Function<String, List<String>> headerValues, String contentType, byte[] body) {
        String target = withHeaders(path + (query == null ? "" : "?" + query), route.fingerprintHeaders(),
                headerValues);
        return route.fingerprinter().fingerprint(method, target, contentType, body);
    }

    /**
     * The route's fingerprinted headers after the target, each value length-prefixed so that no path, query or value
     * can spell another request's; the target alone when the route fingerprints no header.
     */
    private static String withHeaders(String target, List<String> headers,
            Function<String, List<String>> headerValues) {
        if (headers.isEmpty()) {
            return target;
        }
        StringBuilder out = new StringBuilder().append(target.length()).append(':').append(target);
        for (String name : headers) {
            List<String> values = headerValues.apply(name);
            out.append('\n').append(name).append('=').append(values.size());
            for (String v : values) {
                out.append(',').append(v.length()).append(':').append(v);
            }
        }
        return out.toString();
    }

    /** The answer to an outcome that did not run the handler here, or null for one that did (executed, unprotected). */
    public static HttpAnswer refusal(Outcome<StoredResponse> outcome) {
        if (outcome instanceof Outcome.Replayed<StoredResponse> replayed) {
            return replay(replayed.value());
        } else if (outcome instanceof Outcome.InProgress<StoredResponse> inProgress) {
            return ProblemType.IN_PROGRESS.answer("a request with this Idempotency-Key is still being processed; "
                    + "retry after the time in Retry-After", null, inProgress.retryAfter());
        } else if (outcome instanceof Outcome.FingerprintMismatch<StoredResponse>) {
            return ProblemType.KEY_REUSED.answer("this Idempotency-Key was already used with a different request; "
                    + "use a new key for a new intent", null, null);
        } else if (outcome instanceof Outcome.StoreUnavailable<StoredResponse> unavailable) {
            return ProblemType.STORE_UNAVAILABLE.answer("the idempotency store is unavailable; the request was not "
                    + "processed", null, unavailable.retryAfter());
        }
        return null;
    }

    /**
     * The answer to the outcome of work a handler ran itself (a phased operation) whose answer {@code codec} stores:
     * the answer as it is stored, when it ran here or without protection; its replay; else the refusal's problem.
     */
    public static <T> HttpAnswer answer(Outcome<T> outcome, ResponseCodec<T> codec) {
        Require.notNull(codec, "codec");
        if (outcome instanceof Outcome.Executed<T> executed) {
            return asAnswer(codec.encode(executed.value()));
        } else if (outcome instanceof Outcome.Unprotected<T> unprotected) {
            return asAnswer(codec.encode(unprotected.value()));
        } else if (outcome instanceof Outcome.Replayed<T> replayed) {
            return replay(codec.encode(replayed.value()));
        }
        // In progress, key reused, store unavailable: no value, so the cast carries nothing of T.
        @SuppressWarnings("unchecked")
        Outcome<StoredResponse> refused = (Outcome<StoredResponse>) (Outcome<?>) Require.notNull(outcome, "outcome");
        return refusal(refused);
    }

    private static HttpAnswer asAnswer(StoredResponse stored) {
        return new HttpAnswer(stored.status(), stored.headers(), stored.body());
    }

    /** A stored response as a replay: its status, headers and body, with {@code Idempotent-Replayed: true}. */
    public static HttpAnswer replay(StoredResponse stored) {
        Map<String, List<String>> headers = new LinkedHashMap<>(stored.headers());
        headers.put(REPLAYED_HEADER, List.of("true"));
        return new HttpAnswer(stored.status(), headers, stored.body());
    }

    /**
     * The answer to the engine's failure after the handler ran or a replay was refused, or null when the
     * failure is the handler's own and propagates: outcome unknown, the outcome not recorded, a stored
     * response that cannot be opened.
     */
    public static HttpAnswer failure(Throwable failure) {
        if (failure instanceof OutcomeUnknownException e) {
            return ProblemType.OUTCOME_UNKNOWN.answer("the request may have been processed, but its outcome is not "
                    + "known: it may have taken effect. A retry with the same key after Retry-After may process it "
                    + "again", null, e.retryAfter() == null ? STORE_RETRY_AFTER : e.retryAfter());
        } else if (failure instanceof StoreUnavailableException e) {
            return ProblemType.STORE_UNAVAILABLE.answer("the request could not be recorded; retry with the same key",
                    null, e.retryAfter() == null ? STORE_RETRY_AFTER : e.retryAfter());
        } else if (failure instanceof StoredResponseUnreadableException) {
            return ProblemType.STORED_RESPONSE_UNREADABLE.answer("this Idempotency-Key's request was processed "
                    + "earlier, but its stored response cannot be read; it is not processed again", null, null);
        }
        return null;
    }
}
