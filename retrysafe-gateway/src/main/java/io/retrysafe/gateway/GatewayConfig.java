package io.retrysafe.gateway;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The gateway's configuration, as read from its YAML file by {@link ConfigLoader}; immutable. Every key and
 * its default is in {@code docs/gateway.md}.
 */
public record GatewayConfig(Listen listen, Admin admin, Upstream upstream, Optional<Scope> scope, Paths paths,
        Store store, Idempotency idempotency, List<Route> routes) {

    public static final int DEFAULT_PORT = 8080;
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_RESPONSE_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(1);
    /** How long a claim or a completion waits for the replicas of a Redis store that waits for them. */
    public static final Duration DEFAULT_REPLICA_TIMEOUT = Duration.ofMillis(500);
    /** The admin port (health and metrics), as Envoy's admin interface has it. */
    public static final int DEFAULT_ADMIN_PORT = 9901;
    /** The request header that tells the upstream the caller the gateway checked. */
    public static final String DEFAULT_CALLER_HEADER = "X-RetrySafe-Caller";
    /** A client's body below this rate (bytes a second, once it has started) is cut off: a slow client holds no thread. */
    public static final long DEFAULT_MIN_REQUEST_DATA_RATE = 1024;

    public GatewayConfig {
        routes = List.copyOf(routes);
    }

    /** Where the gateway listens. {@code port} 0 picks a free port (tests). */
    public record Listen(String host, int port, Duration idleTimeout, Duration drainTimeout, long minRequestDataRate) {
    }

    /** Where the gateway's own endpoints ({@code /health}, {@code /metrics}) listen: never on the proxied port. */
    public record Admin(String host, int port) {
    }

    /**
     * How request paths are matched: {@code caseSensitive} false matches routes and public paths in any case (and
     * forwards the route's spelling); {@code publicRoutes} need no caller and are forwarded without one.
     */
    public record Paths(boolean caseSensitive, List<PublicRoute> publicRoutes) {
        public Paths {
            publicRoutes = List.copyOf(publicRoutes);
        }
    }

    /** A method and path pattern any client may call, unauthenticated. */
    public record PublicRoute(String method, String path) {
    }

    /**
     * The service behind the gateway: {@code url} is where requests no route matches go (unprotected), and each
     * route's upstream unless it names its own; empty when every route names one. {@code callerHeader} carries the
     * checked caller (a client's own is removed); {@code chunkedRequests} false sends every body with its length.
     */
    public record Upstream(Optional<URI> url, Duration connectTimeout, Duration responseTimeout, Duration retryAfter,
            String callerHeader, boolean chunkedRequests) {
    }

    /** Whose intent a key is: the caller, as one of these sources names it. */
    public sealed interface Scope permits BasicScope, JwtScope, HeaderScope {
    }

    /** HTTP Basic against a users file ({@code name:bcrypt-hash} lines). */
    public record BasicScope(Path usersFile) implements Scope {
    }

    /**
     * A bearer JWT whose signature verifies against a JWKS file or an HMAC secret (from an environment variable);
     * the scope is its {@code sub}. {@code issuer} and {@code audience}, when given, must match.
     */
    public record JwtScope(Optional<Path> jwksFile, Optional<String> secretEnv, Optional<String> issuer,
            Optional<String> audience) implements Scope {
    }

    /** A header set by a trusted proxy in front of the gateway (a tenant id); only as safe as that proxy. */
    public record HeaderScope(String name) implements Scope {
    }

    public enum StoreType {
        POSTGRESQL, MARIADB, REDIS, DYNAMODB
    }

    /**
     * The store. JDBC ({@code postgresql}, {@code mariadb}): {@code url}, {@code username}, the password from
     * the environment variable {@code passwordEnv}, {@code poolSize}, {@code table}. Redis: {@code url}
     * ({@code redis://}, {@code rediss://} or {@code redis-sentinel://}), or {@code clusterUrls}; {@code keyPrefix};
     * {@code waitForReplicas} (0: none) replicas that must acknowledge each claim and completion, within
     * {@code replicaTimeout} (not on a cluster).
     * DynamoDB: {@code table}; {@code url}, an endpoint other than the region's; {@code createSchema} creates the
     * table. Region and credentials come from the SDK's default chains ({@code AWS_REGION}, a role, …).
     */
    public record Store(StoreType type, Optional<String> url, List<String> clusterUrls, Optional<String> username,
            Optional<String> passwordEnv, int poolSize, Optional<String> table, Optional<String> keyPrefix,
            boolean createSchema, int waitForReplicas, Duration replicaTimeout) {
        public Store {
            clusterUrls = List.copyOf(clusterUrls);
        }
    }

    /** The Idempotency-Key rules every route shares unless it sets its own. */
    public record Idempotency(int maxRequestBytes, int maxResponseBytes, Set<String> storedHeaders, Duration lease,
            Duration retention, Duration waitForResult) {
        public Idempotency {
            storedHeaders = Set.copyOf(storedHeaders);
        }
    }

    /** A protected method and path pattern, where it goes, and its own rules (its scope: its own, or the default). */
    public record Route(String method, String path, URI upstream, boolean keyRequired, List<String> jsonMembers,
            List<String> fingerprintHeaders, Duration lease, Duration retention, Duration responseTimeout,
            Set<String> storedHeaders, Scope scope) {
        public Route {
            jsonMembers = List.copyOf(jsonMembers);
            fingerprintHeaders = List.copyOf(fingerprintHeaders);
            storedHeaders = Set.copyOf(storedHeaders);
        }
    }
}
