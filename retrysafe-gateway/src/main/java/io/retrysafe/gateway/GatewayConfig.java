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
public record GatewayConfig(Listen listen, Upstream upstream, Optional<Scope> scope, Store store,
        Idempotency idempotency, List<Route> routes) {

    public static final int DEFAULT_PORT = 8080;
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_RESPONSE_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(1);

    public GatewayConfig {
        routes = List.copyOf(routes);
    }

    /** Where the gateway listens. {@code port} 0 picks a free port (tests). */
    public record Listen(String host, int port, Duration idleTimeout, Duration drainTimeout) {
    }

    /**
     * The service behind the gateway: {@code url} is where requests no route matches go (unprotected), and each
     * route's upstream unless it names its own; empty when every route names one.
     */
    public record Upstream(Optional<URI> url, Duration connectTimeout, Duration responseTimeout, Duration retryAfter) {
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
        POSTGRESQL, MARIADB, REDIS
    }

    /**
     * The store. JDBC ({@code postgresql}, {@code mariadb}): {@code url}, {@code username}, the password from
     * the environment variable {@code passwordEnv}, {@code poolSize}, {@code table}. Redis: {@code url}
     * ({@code redis://}, {@code rediss://} or {@code redis-sentinel://}), or {@code clusterUrls}; {@code keyPrefix}.
     */
    public record Store(StoreType type, Optional<String> url, List<String> clusterUrls, Optional<String> username,
            Optional<String> passwordEnv, int poolSize, Optional<String> table, Optional<String> keyPrefix,
            boolean createSchema) {
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
