package io.retrysafe.gateway;

import io.retrysafe.OperationPolicy;
import io.retrysafe.gateway.GatewayConfig.Admin;
import io.retrysafe.gateway.GatewayConfig.BasicScope;
import io.retrysafe.gateway.GatewayConfig.HeaderScope;
import io.retrysafe.gateway.GatewayConfig.Idempotency;
import io.retrysafe.gateway.GatewayConfig.JwtScope;
import io.retrysafe.gateway.GatewayConfig.Listen;
import io.retrysafe.gateway.GatewayConfig.Paths;
import io.retrysafe.gateway.GatewayConfig.PublicRoute;
import io.retrysafe.gateway.GatewayConfig.Route;
import io.retrysafe.gateway.GatewayConfig.Scope;
import io.retrysafe.gateway.GatewayConfig.Store;
import io.retrysafe.gateway.GatewayConfig.StoreType;
import io.retrysafe.gateway.GatewayConfig.Upstream;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentRoute;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.api.lowlevel.Compose;
import org.snakeyaml.engine.v2.exceptions.Mark;
import org.snakeyaml.engine.v2.exceptions.MarkedYamlEngineException;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;
import org.snakeyaml.engine.v2.nodes.Node;

/**
 * Reads {@link GatewayConfig} from YAML. Everything is checked here, before the gateway binds a port: a refusal
 * is a {@link ConfigException} naming the line, the column and the reason.
 */
public final class ConfigLoader {
    /** The environment variable that overrides {@code listen.port}. */
    public static final String PORT_ENV = "PORT";
    /** The environment variable that overrides {@code admin.port}. */
    public static final String ADMIN_PORT_ENV = "ADMIN_PORT";
    /** An HTTP field name (RFC 9110, 5.1). */
    private static final String TOKEN = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";

    private ConfigLoader() {
    }

    public static GatewayConfig load(Path file, Map<String, String> env) {
        String name = file.toString();
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConfigException(name, 0, 0, "cannot read the configuration file: " + e);
        }
        return parse(name, text, env, file.toAbsolutePath().getParent());
    }

    /** @param base the directory that relative file names in the configuration are resolved against */
    static GatewayConfig parse(String name, String text, Map<String, String> env, Path base) {
        Node root;
        try {
            root = new Compose(LoadSettings.builder().setLabel(name).setAllowDuplicateKeys(true).build())
                    .composeString(text).orElse(null);
        } catch (MarkedYamlEngineException e) {
            Mark mark = e.getProblemMark().or(e::getContextMark).orElse(null);
            throw new ConfigException(name, mark == null ? 0 : mark.getLine() + 1, mark == null ? 0 : mark.getColumn() + 1,
                    "not valid YAML: " + e.getProblem());
        } catch (YamlEngineException e) {
            throw new ConfigException(name, 0, 0, "not valid YAML: " + e.getMessage());
        }
        if (root == null) {
            throw new ConfigException(name, 1, 1, "the configuration is empty");
        }
        YamlSection top = new YamlSection(name, "", root);
        Listen listen = listen(top.section("listen"), top, env);
        Admin admin = admin(top.section("admin"), env);
        Upstream upstream = upstream(top.section("upstream"));
        YamlSection scopeSection = top.section("scope");
        Optional<Scope> scope = scopeSection == null ? Optional.empty() : Optional.of(scope(scopeSection, base));
        Paths paths = paths(top.section("paths"));
        Store store = store(top.section("store"), top);
        Idempotency idempotency = idempotency(top.section("idempotency"));
        List<YamlSection> routeSections = top.sections("routes");
        top.done();
        if (routeSections.isEmpty()) {
            throw top.error("routes", "routes must list at least one route to protect");
        }
        List<Route> routes = new ArrayList<>();
        for (YamlSection r : routeSections) {
            routes.add(route(r, upstream, idempotency, scope, top, base));
        }
        if (admin.port() != 0 && admin.port() == listen.port()) {
            throw top.error("admin", "admin.port must differ from listen.port, but both were " + admin.port());
        }
        return new GatewayConfig(listen, admin, upstream, scope, paths, store, idempotency, routes);
    }

    private static Listen listen(YamlSection s, YamlSection top, Map<String, String> env) {
        int port = GatewayConfig.DEFAULT_PORT;
        String host = "0.0.0.0";
        Duration idle = GatewayConfig.DEFAULT_IDLE_TIMEOUT;
        Duration drain = GatewayConfig.DEFAULT_DRAIN_TIMEOUT;
        long minRate = GatewayConfig.DEFAULT_MIN_REQUEST_DATA_RATE;
        if (s != null) {
            host = s.string("host", host);
            port = s.integer("port", port, 0, 65535);
            idle = s.duration("idle-timeout", idle);
            drain = s.duration("drain-timeout", drain);
            minRate = s.integer("min-request-data-rate", (int) minRate, 0, Integer.MAX_VALUE);
            s.done();
        }
        port = portFromEnv(env, PORT_ENV, port);
        return new Listen(host, port, idle, drain, minRate);
    }

    /** The port an environment variable names, when it is set; else {@code port}. */
    private static int portFromEnv(Map<String, String> env, String name, int port) {
        String fromEnv = env.get(name);
        if (fromEnv == null || fromEnv.isBlank()) {
            return port;
        }
        int p;
        try {
            p = Integer.parseInt(fromEnv.trim());
        } catch (NumberFormatException e) {
            p = -1;
        }
        if (p < 0 || p > 65535) {
            throw new ConfigException("environment", 0, 0, name + " must be a port number (0 to 65535), but was \""
                    + fromEnv + "\"");
        }
        return p;
    }

    private static Admin admin(YamlSection s, Map<String, String> env) {
        String host = "127.0.0.1";
        int port = GatewayConfig.DEFAULT_ADMIN_PORT;
        if (s != null) {
            host = s.string("host", host);
            port = s.integer("port", port, 0, 65535);
            s.done();
        }
        return new Admin(host, portFromEnv(env, ADMIN_PORT_ENV, port));
    }

    private static Paths paths(YamlSection s) {
        if (s == null) {
            return new Paths(false, List.of());
        }
        boolean caseSensitive = s.bool("case-sensitive", false);
        List<PublicRoute> open = new ArrayList<>();
        for (YamlSection r : s.sections("public")) {
            String method = r.requiredString("method");
            String path = r.requiredString("path");
            try {
                IdempotentRoute.of(method, path).build();
            } catch (IllegalArgumentException e) {
                throw r.error(r.has("path") ? "path" : "method", r.path() + ": " + e.getMessage());
            }
            r.done();
            open.add(new PublicRoute(method.toUpperCase(Locale.ROOT), path));
        }
        s.done();
        return new Paths(caseSensitive, open);
    }

    private static Upstream upstream(YamlSection s) {
        if (s == null) {
            return new Upstream(Optional.empty(), GatewayConfig.DEFAULT_CONNECT_TIMEOUT,
                    GatewayConfig.DEFAULT_RESPONSE_TIMEOUT, GatewayConfig.DEFAULT_RETRY_AFTER,
                    GatewayConfig.DEFAULT_CALLER_HEADER, true);
        }
        Optional<URI> url = s.has("url") ? Optional.of(url(s, "url")) : Optional.empty();
        String callerHeader = s.string("caller-header", GatewayConfig.DEFAULT_CALLER_HEADER);
        if (!callerHeader.matches(TOKEN)) {
            throw s.error("caller-header", s.qualified("caller-header") + " must be a header name, but was \""
                    + callerHeader + "\"");
        }
        Upstream u = new Upstream(url, s.duration("connect-timeout", GatewayConfig.DEFAULT_CONNECT_TIMEOUT),
                s.duration("response-timeout", GatewayConfig.DEFAULT_RESPONSE_TIMEOUT),
                s.duration("retry-after", GatewayConfig.DEFAULT_RETRY_AFTER), callerHeader,
                s.bool("chunked-requests", true));
        s.done();
        return u;
    }

    private static URI url(YamlSection s, String key) {
        String raw = s.requiredString(key);
        URI uri;
        try {
            uri = new URI(raw);
        } catch (URISyntaxException e) {
            throw s.error(key, s.qualified(key) + " must be a URL, but was \"" + raw + "\": " + e.getReason());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
            throw s.error(key, s.qualified(key) + " must be an http:// or https:// URL with a host, but was \"" + raw
                    + "\"");
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw s.error(key, s.qualified(key) + " must not have a query or a fragment, but was \"" + raw + "\"");
        }
        return uri;
    }

    private static Scope scope(YamlSection s, Path base) {
        List<String> given = new ArrayList<>();
        for (String k : List.of("basic", "jwt", "trusted-header")) {
            if (s.has(k)) {
                given.add(k);
            }
        }
        if (given.size() != 1) {
            // Read them all, so that done() reports an unknown key rather than this.
            s.section("basic");
            s.section("jwt");
            s.section("trusted-header");
            s.done();
            throw s.error(given.isEmpty() ? "" : given.get(1), s.path() + " must have exactly one of basic, jwt, "
                    + "trusted-header, but had " + (given.isEmpty() ? "none" : String.join(" and ", given)));
        }
        Scope scope;
        YamlSection c = s.section(given.get(0));
        switch (given.get(0)) {
            case "basic" -> {
                Path users = file(c, "users-file", base);
                scope = new BasicScope(users);
            }
            case "jwt" -> {
                Optional<Path> jwks = c.has("jwks-file") ? Optional.of(file(c, "jwks-file", base)) : Optional.empty();
                Optional<String> secretEnv = Optional.ofNullable(c.string("secret-env", null));
                if (jwks.isPresent() == secretEnv.isPresent()) {
                    throw c.error("", c.path() + " must have exactly one of jwks-file, secret-env");
                }
                scope = new JwtScope(jwks, secretEnv, Optional.ofNullable(c.string("issuer", null)),
                        Optional.ofNullable(c.string("audience", null)));
            }
            default -> {
                String header = c.requiredString("name");
                if (!header.matches(TOKEN)) {
                    throw c.error("name", c.qualified("name") + " must be a header name, but was \"" + header + "\"");
                }
                scope = new HeaderScope(header);
            }
        }
        c.done();
        s.done();
        return scope;
    }

    private static Path file(YamlSection s, String key, Path base) {
        Path p = base.resolve(s.requiredString(key));
        if (!Files.isReadable(p)) {
            throw s.error(key, s.qualified(key) + " names a file that cannot be read: " + p);
        }
        return p;
    }

    private static Store store(YamlSection s, YamlSection top) {
        if (s == null) {
            throw top.error("store", "store is required: type postgresql, mariadb, redis or dynamodb");
        }
        String typeName = s.requiredString("type");
        StoreType type;
        try {
            type = StoreType.valueOf(typeName.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw s.error("type", "store.type must be postgresql, mariadb, redis or dynamodb, but was \"" + typeName + "\"");
        }
        Optional<String> url = Optional.ofNullable(s.string("url", null));
        List<String> cluster = s.strings("cluster-urls", List.of());
        Optional<String> username = Optional.ofNullable(s.string("username", null));
        Optional<String> passwordEnv = Optional.ofNullable(s.string("password-env", null));
        int poolSize = s.integer("pool-size", 10, 1, 1000);
        Optional<String> table = Optional.ofNullable(s.string("table", null));
        Optional<String> keyPrefix = Optional.ofNullable(s.string("key-prefix", null));
        boolean createSchema = s.bool("create-schema", false);
        int waitForReplicas = s.integer("wait-for-replicas", 0, 0, 16);
        Duration replicaTimeout = s.duration("replica-timeout", GatewayConfig.DEFAULT_REPLICA_TIMEOUT);
        s.done();
        if (waitForReplicas > 0 && (type != StoreType.REDIS || !cluster.isEmpty())) {
            throw s.error("wait-for-replicas", "store.wait-for-replicas is for a redis store on store.url (standalone "
                    + "or Sentinel): on a Redis Cluster a WAIT reaches one node, and other stores have no replicas "
                    + "to wait for");
        }
        if (type == StoreType.REDIS) {
            if (url.isPresent() == !cluster.isEmpty()) {
                throw s.error("url", "a redis store needs exactly one of store.url, store.cluster-urls");
            }
            if (table.isPresent()) {
                throw s.error("table", "store.table is for postgresql and mariadb; a redis store has key-prefix");
            }
            for (String u : url.map(List::of).orElse(cluster)) {
                if (!u.matches("(redis|rediss|redis-sentinel)://.+")) {
                    throw s.error(url.isPresent() ? "url" : "cluster-urls", "a redis URL starts with redis://, "
                            + "rediss:// or redis-sentinel://, but was \"" + u + "\"");
                }
            }
        } else if (type == StoreType.DYNAMODB) {
            if (url.isPresent() && !url.get().matches("https?://.+")) {
                throw s.error("url", "a dynamodb store.url is an endpoint, http:// or https://, but was \"" + url.get()
                        + "\"");
            }
            if (!cluster.isEmpty() || keyPrefix.isPresent() || username.isPresent() || passwordEnv.isPresent()) {
                throw s.error(!cluster.isEmpty() ? "cluster-urls" : keyPrefix.isPresent() ? "key-prefix"
                        : username.isPresent() ? "username" : "password-env", "a dynamodb store has url, table and "
                        + "create-schema; its region and credentials come from the AWS SDK's environment");
            }
        } else {
            if (url.isEmpty()) {
                throw s.error("", "store.url (a jdbc: URL) is required for " + typeName);
            }
            String prefix = type == StoreType.POSTGRESQL ? "jdbc:postgresql:" : "jdbc:mariadb:";
            if (!url.get().startsWith(prefix)) {
                throw s.error("url", "store.url must start with " + prefix + " for " + typeName + ", but was \""
                        + url.get() + "\"");
            }
            if (!cluster.isEmpty() || keyPrefix.isPresent()) {
                throw s.error(cluster.isEmpty() ? "key-prefix" : "cluster-urls", "store.cluster-urls and "
                        + "store.key-prefix are for redis");
            }
        }
        return new Store(type, url, cluster, username, passwordEnv, poolSize, table, keyPrefix, createSchema,
                waitForReplicas, replicaTimeout);
    }

    private static Idempotency idempotency(YamlSection s) {
        Idempotency d = new Idempotency(HttpIdempotency.DEFAULT_MAX_REQUEST_BYTES,
                HttpIdempotency.DEFAULT_MAX_RESPONSE_BYTES, HttpIdempotency.DEFAULT_REPLAYED_HEADERS,
                OperationPolicy.DEFAULT_LEASE_TTL, OperationPolicy.DEFAULT_RETENTION,
                OperationPolicy.DEFAULT_WAIT_FOR_RESULT);
        if (s == null) {
            return d;
        }
        Idempotency i = new Idempotency(s.integer("max-request-bytes", d.maxRequestBytes(), 0, Integer.MAX_VALUE - 8),
                s.integer("max-response-bytes", d.maxResponseBytes(), 0, Integer.MAX_VALUE - 8),
                storedHeaders(s, d.storedHeaders()), s.duration("lease", d.lease()), s.duration("retention", d.retention()),
                s.durationOrZero("wait-for-result", d.waitForResult()));
        s.done();
        leaseWithinRetention(s, "lease", i.lease(), i.retention());
        return i;
    }

    private static Set<String> storedHeaders(YamlSection s, Set<String> defaultValue) {
        List<String> names = s.strings("stored-headers", null);
        if (names == null) {
            return defaultValue;
        }
        Set<String> lower = new LinkedHashSet<>();
        for (String n : names) {
            String l = n.toLowerCase(Locale.ROOT);
            if (HttpIdempotency.FORBIDDEN_HEADERS.contains(l)) {
                throw s.error("stored-headers", s.qualified("stored-headers") + " must not include credentials or "
                        + "cookies, but included " + n);
            }
            lower.add(l);
        }
        return lower;
    }

    private static void leaseWithinRetention(YamlSection s, String key, Duration lease, Duration retention) {
        if (lease.compareTo(retention) > 0) {
            throw s.error(key, s.qualified(key) + " must not exceed the retention, but was " + lease + " with a "
                    + "retention of " + retention);
        }
    }

    private static Route route(YamlSection s, Upstream upstream, Idempotency defaults, Optional<Scope> defaultScope,
            YamlSection top, Path base) {
        String method = s.requiredString("method");
        String path = s.requiredString("path");
        try {
            IdempotentRoute.of(method, path).build();
        } catch (IllegalArgumentException e) {
            throw s.error(s.has("path") ? "path" : "method", s.path() + ": " + e.getMessage());
        }
        URI target;
        if (s.has("upstream")) {
            target = url(s, "upstream");
        } else if (upstream.url().isPresent()) {
            target = upstream.url().get();
        } else {
            throw s.error("", s.path() + " needs an upstream: give upstream.url, or upstream in the route");
        }
        boolean keyRequired = s.bool("key-required", true);
        List<String> members = List.of();
        List<String> headers = List.of();
        YamlSection fingerprint = s.section("fingerprint");
        if (fingerprint != null) {
            members = fingerprint.strings("json-members", List.of());
            headers = fingerprint.strings("headers", List.of());
            try {
                IdempotentRoute.of(method, path).fingerprintHeaders(headers.toArray(String[]::new));
            } catch (IllegalArgumentException e) {
                throw fingerprint.error("headers", fingerprint.qualified("headers") + ": " + e.getMessage());
            }
            headers = headers.stream().map(h -> h.toLowerCase(Locale.ROOT)).toList();
            for (String m : members) {
                if (!m.startsWith("/")) {
                    throw fingerprint.error("json-members", "each of " + fingerprint.qualified("json-members")
                            + " is a JSON Pointer starting with '/', but one was \"" + m + "\"");
                }
            }
            fingerprint.done();
        }
        Duration lease = s.duration("lease", defaults.lease());
        Duration retention = s.duration("retention", defaults.retention());
        leaseWithinRetention(s, "lease", lease, retention);
        Duration responseTimeout = s.duration("response-timeout", upstream.responseTimeout());
        Set<String> stored = storedHeaders(s, defaults.storedHeaders());
        YamlSection scopeSection = s.section("scope");
        Scope scope;
        if (scopeSection != null) {
            scope = scope(scopeSection, base);
        } else if (defaultScope.isPresent()) {
            scope = defaultScope.get();
        } else {
            throw top.error("scope", "scope is required (or one in each route): name whose intent a key is (basic, "
                    + "jwt or trusted-header); see docs/gateway.md");
        }
        s.done();
        return new Route(method.toUpperCase(Locale.ROOT), path, target, keyRequired, members, headers, lease,
                retention, responseTimeout, stored, scope);
    }
}
