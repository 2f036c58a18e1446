package io.retrysafe.spring;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Require;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentRoute;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * {@code GET /actuator/idempotency}: the idempotency policy of this application, as its clients need
 * it: which routes take an {@code Idempotency-Key}, whether they require one, how long a key protects
 * its intent (the retention), how long a duplicate of a request in flight waits before {@code 409},
 * which keys are accepted and what the fingerprint covers. The IETF Idempotency-Key draft asks a
 * resource to publish its expiration policy (§2.3); this is that publication in a form a program can
 * read.
 *
 * <p>It shows configuration only: no key, scope, principal, stored response, store name, table or
 * header that carries a scope. Read-only. Durations are ISO-8601 ({@code PT24H}).
 */
@Endpoint(id = IdempotencyEndpoint.ID)
public class IdempotencyEndpoint {
    /** The endpoint's id, and its path under the actuator's base path. */
    public static final String ID = "idempotency";

    private final RetrySafe retrySafe;
    private final KeyRules keyRules;
    private final HttpIdempotency http;
    private final Duration lockTimeout;
    private final Predicate<IdempotentRoute> standalone;
    private final RetrySafeCompleterScheduler completer;
    private volatile Description description;

    /**
     * @param http        the filter's configuration; null when the filter is off (then no route is listed)
     * @param lockTimeout in transactional mode, the store's lock timeout (how long a duplicate waits for the
     *                    first request's transaction); null in standalone mode
     */
    public IdempotencyEndpoint(RetrySafe retrySafe, KeyRules keyRules, HttpIdempotency http, Duration lockTimeout) {
        this(retrySafe, keyRules, http, lockTimeout, route -> false, null);
    }

    /**
     * @param standalone in transactional mode, the routes that run in standalone mode all the same
     * @param completer  the completer of phased operations; null when there is none
     */
    IdempotencyEndpoint(RetrySafe retrySafe, KeyRules keyRules, HttpIdempotency http, Duration lockTimeout,
            Predicate<IdempotentRoute> standalone, RetrySafeCompleterScheduler completer) {
        this.completer = completer;
        this.retrySafe = Require.notNull(retrySafe, "retrySafe");
        this.keyRules = Require.notNull(keyRules, "keyRules");
        this.http = http;
        this.lockTimeout = lockTimeout;
        this.standalone = standalone;
    }

    /**
     * The policy; computed once, at the first read: the configuration is immutable once the application runs,
     * and which routes run in standalone mode is known once it has started.
     */
    @ReadOperation
    public Description idempotency() {
        Description d = description;
        if (d == null) {
            d = describe();
            description = d;
        }
        return completer == null ? d : d.withCompleter(completer());
    }

    /** The completer as of its last run: read from memory, never from the store. */
    private Completer completer() {
        return completer.completer().map(c -> new Completer(List.copyOf(c.operations()), c.idleFor().toString(),
                c.batchSize(), completer.lastBacklog() < 0 ? null : completer.lastBacklog(),
                completer.lastRun().map(r -> new CompleterRun(r.ran(), r.found(), r.forwarded(), r.compensated(),
                        r.failed(), r.taken(), r.duration().toString())).orElse(null)))
                .orElse(null);
    }

    private Description describe() {
        OperationPolicy defaults = retrySafe.policy();
        boolean transactional = lockTimeout != null;
        List<Route> routes = http == null ? List.of() : http.routes().stream().map(r -> route(r,
                r.policy().orElse(defaults), transactional && standalone.test(r))).toList();
        return new Description(transactional ? "transactional" : "standalone",
                new Key(HttpIdempotency.HEADER, keyRules.minLength(), keyRules.maxLength(),
                        http == null ? null : http.maxRequestBytes()),
                policy(defaults, lockTimeout), routes, null);
    }

    private Route route(IdempotentRoute r, OperationPolicy p, boolean standaloneRoute) {
        FingerprintPolicy fingerprint = r.jsonMembers().isEmpty() ? new FingerprintPolicy("body", List.of())
                : new FingerprintPolicy("json-members", r.jsonMembers());
        return new Route(r.method(), r.pattern(), r.keyRequired(), p.retention().toString(),
                inFlight(p, standaloneRoute ? null : lockTimeout), fingerprint, standaloneRoute ? "standalone" : null);
    }

    private static Policy policy(OperationPolicy p, Duration lockTimeout) {
        return new Policy(p.retention().toString(), inFlight(p, lockTimeout));
    }

    private static InFlight inFlight(OperationPolicy p, Duration lockTimeout) {
        // Transactional: the key is held by the open transaction, so there is no lease; a duplicate
        // blocks on the key's row for the lock timeout. Standalone: the engine's lease and wait.
        return lockTimeout != null
                ? new InFlight(null, lockTimeout.toString(), p.retryAfter().toString())
                : new InFlight(p.leaseTtl().toString(), p.waitForResult().toString(), p.retryAfter().toString());
    }

    /**
     * @param mode     {@code transactional} or {@code standalone}
     * @param key      which keys are accepted
     * @param defaults the policy of {@code @Idempotent} methods and of routes without their own
     * @param routes   the protected routes, in the order they are matched (the first match applies)
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Description(String mode, Key key, Policy defaults, List<Route> routes, Completer completer)
            implements OperationResponseBody {

        Description withCompleter(Completer completer) {
            return new Description(mode, key, defaults, routes, completer);
        }
    }

    /**
     * The completer of phased operations; absent when the application declares none.
     *
     * @param operations the operations it may find
     * @param idleFor    how long an operation nobody holds stays untouched before it is taken over
     * @param batchSize  operations taken over per run, at most
     * @param backlog    abandoned operations counted after the last run; absent before the first
     * @param lastRun    what the last run on this instance did; absent before the first
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Completer(List<String> operations, String idleFor, int batchSize, Long backlog, CompleterRun lastRun) {
    }

    /**
     * @param ran false when another instance held the completer's lock
     * @param taken operations a retry held or ended first
     */
    public record CompleterRun(boolean ran, int found, int forwarded, int compensated, int failed, int taken,
            String took) {
    }

    /**
     * @param header          the request header
     * @param minLength       shortest key accepted
     * @param maxLength       longest key accepted
     * @param maxRequestBytes largest body fingerprinted (larger: {@code 413}); absent when the filter is off
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Key(String header, int minLength, int maxLength, Integer maxRequestBytes) {
    }

    /**
     * @param retention how long a key protects its intent: a retry within it is replayed (or refused when
     *                  the request differs); after it, the same key is a new request
     * @param inFlight  what a duplicate of a request still in flight meets
     */
    public record Policy(String retention, InFlight inFlight) {
    }

    /**
     * @param lease         standalone mode: how long an attempt holds its key before another may take over;
     *                      absent in transactional mode, where the open transaction holds it
     * @param duplicateWait the longest a duplicate waits for the first request's outcome before {@code 409}
     * @param retryAfter    the {@code Retry-After} of a {@code 409} or {@code 503}
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record InFlight(String lease, String duplicateWait, String retryAfter) {
    }

    /**
     * @param method      HTTP method
     * @param pattern     path pattern inside the application
     * @param keyRequired whether a request without a key is refused ({@code 400}) rather than passed through
     * @param retention   this route's retention
     * @param inFlight    what a duplicate of a request in flight meets
     * @param fingerprint what decides whether a retry is the same request
     * @param mode        {@code standalone} for a route that runs in standalone mode although the application is
     *                    transactional (an asynchronous handler serves it); absent otherwise
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Route(String method, String pattern, boolean keyRequired, String retention, InFlight inFlight,
            FingerprintPolicy fingerprint, String mode) {
    }

    /**
     * @param body    {@code body}: the whole body (JSON in canonical form); {@code json-members}: only
     *                {@code members}, so a client may add or reorder others. Method, path, query and
     *                content type are always covered
     * @param members JSON Pointers of the members covered; empty for {@code body}
     */
    public record FingerprintPolicy(String body, List<String> members) {
    }
}
