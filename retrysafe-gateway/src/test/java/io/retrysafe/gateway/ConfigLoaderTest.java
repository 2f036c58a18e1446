package io.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.gateway.GatewayConfig.BasicScope;
import io.retrysafe.gateway.GatewayConfig.HeaderScope;
import io.retrysafe.gateway.GatewayConfig.Route;
import io.retrysafe.gateway.GatewayConfig.StoreType;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ConfigLoaderTest {
    private static final String MINIMAL = """
            upstream:
              url: http://127.0.0.1:9000
            scope:
              trusted-header:
                name: X-Tenant
            store:
              type: postgresql
              url: jdbc:postgresql://127.0.0.1:5432/app
            routes:
              - method: POST
                path: /payments
            """;

    @TempDir
    Path dir;

    @BeforeEach
    void usersFile() throws IOException {
        Files.writeString(dir.resolve("users.txt"), "alice:$2a$04$abcdefghijklmnopqrstuu5Fv6vMZT1wcvN7sC3K5dTyBbwOKIw.W\n");
    }

    private GatewayConfig parse(String yaml) {
        return ConfigLoader.parse("gateway.yaml", yaml, Map.of(), dir);
    }

    private ConfigException refusal(String yaml) {
        try {
            parse(yaml);
        } catch (ConfigException e) {
            return e;
        }
        throw new AssertionError("the configuration was accepted:\n" + yaml);
    }

    @Test
    void minimalConfigurationTakesTheDocumentedDefaults() {
        GatewayConfig c = parse(MINIMAL);

        assertThat(c.listen().port()).isEqualTo(GatewayConfig.DEFAULT_PORT);
        assertThat(c.listen().idleTimeout()).isEqualTo(GatewayConfig.DEFAULT_IDLE_TIMEOUT);
        assertThat(c.upstream().connectTimeout()).isEqualTo(GatewayConfig.DEFAULT_CONNECT_TIMEOUT);
        assertThat(c.scope()).hasValue(new HeaderScope("X-Tenant"));
        assertThat(c.store().type()).isEqualTo(StoreType.POSTGRESQL);
        assertThat(c.store().createSchema()).isFalse();
        Route route = c.routes().get(0);
        assertThat(route.upstream()).isEqualTo(URI.create("http://127.0.0.1:9000"));
        assertThat(route.keyRequired()).isTrue();
        assertThat(route.jsonMembers()).isEmpty();
        assertThat(route.lease()).isEqualTo(Duration.ofSeconds(30));
        assertThat(route.retention()).isEqualTo(Duration.ofHours(24));
        assertThat(route.storedHeaders()).contains("content-type", "location");
        assertThat(route.scope()).isEqualTo(new HeaderScope("X-Tenant"));
        assertThat(c.admin()).isEqualTo(new GatewayConfig.Admin("127.0.0.1", GatewayConfig.DEFAULT_ADMIN_PORT));
        assertThat(c.paths()).isEqualTo(new GatewayConfig.Paths(false, List.of()));
        assertThat(c.upstream().callerHeader()).isEqualTo(GatewayConfig.DEFAULT_CALLER_HEADER);
        assertThat(c.upstream().chunkedRequests()).isTrue();
        assertThat(c.listen().minRequestDataRate()).isEqualTo(GatewayConfig.DEFAULT_MIN_REQUEST_DATA_RATE);
    }

    @Test
    void everyKeyIsRead() {
        GatewayConfig c = parse("""
                listen: { host: 127.0.0.1, port: 9090, idle-timeout: 5s, drain-timeout: 1m, min-request-data-rate: 100 }
                admin: { host: 0.0.0.0, port: 9091 }
                upstream: { url: "http://up:81/base", connect-timeout: 500ms, response-timeout: PT10S, retry-after: 3s,
                            caller-header: X-User, chunked-requests: false }
                scope:
                  basic: { users-file: users.txt }
                paths:
                  case-sensitive: true
                  public:
                    - { method: get, path: /status }
                store: { type: redis, url: "redis://127.0.0.1:6379", key-prefix: "gw:" }
                idempotency:
                  max-request-bytes: 2048
                  max-response-bytes: 4096
                  stored-headers: [Content-Type, ETag]
                  lease: 10s
                  retention: 7d
                  wait-for-result: 0s
                routes:
                  - method: post
                    path: /orders/{id}/pay
                    upstream: http://other:82
                    key-required: false
                    fingerprint: { json-members: [/amount], headers: [X-Account] }
                    lease: 5s
                    retention: 1h
                    response-timeout: 2s
                    stored-headers: [location]
                    scope: { trusted-header: { name: X-Tenant } }
                """);

        assertThat(c.listen()).isEqualTo(new GatewayConfig.Listen("127.0.0.1", 9090, Duration.ofSeconds(5),
                Duration.ofMinutes(1), 100));
        assertThat(c.admin()).isEqualTo(new GatewayConfig.Admin("0.0.0.0", 9091));
        assertThat(c.paths()).isEqualTo(new GatewayConfig.Paths(true, List.of(new GatewayConfig.PublicRoute("GET",
                "/status"))));
        assertThat(c.upstream().callerHeader()).isEqualTo("X-User");
        assertThat(c.upstream().chunkedRequests()).isFalse();
        assertThat(c.upstream().url()).hasValue(URI.create("http://up:81/base"));
        assertThat(c.scope()).hasValue(new BasicScope(dir.resolve("users.txt")));
        assertThat(c.store().keyPrefix()).hasValue("gw:");
        assertThat(c.idempotency().storedHeaders()).containsExactlyInAnyOrder("content-type", "etag");
        assertThat(c.idempotency().retention()).isEqualTo(Duration.ofDays(7));
        assertThat(c.routes()).containsExactly(new Route("POST", "/orders/{id}/pay", URI.create("http://other:82"), false,
                List.of("/amount"), List.of("x-account"), Duration.ofSeconds(5), Duration.ofHours(1),
                Duration.ofSeconds(2), Set.of("location"), new HeaderScope("X-Tenant")));
    }

    @Test
    void portFromTheEnvironmentWins() {
        assertThat(ConfigLoader.parse("gateway.yaml", MINIMAL, Map.of("PORT", "7070"), dir).listen().port())
                .isEqualTo(7070);
        assertThatThrownBy(() -> ConfigLoader.parse("gateway.yaml", MINIMAL, Map.of("PORT", "http"), dir))
                .isInstanceOf(ConfigException.class).hasMessageContaining("PORT must be a port number");
    }

    @ParameterizedTest(name = "{3}")
    @CsvSource(delimiter = '|', textBlock = """
            listen:\\n  port: 80000\\n                                        | 2 | 9  | listen.port must be between 0 and 65535, but was 80000
            listen:\\n  idle-timeout: soon\\n                                 | 2 | 17 | listen.idle-timeout must be a duration
            listen:\\n  prot: 8080\\n                                         | 2 | 3  | unknown key listen.prot
            upstream:\\n  url: ftp://x\\n                                     | 2 | 8  | upstream.url must be an http:// or https:// URL
            store:\\n  type: mongodb\\n                                       | 2 | 9  | store.type must be postgresql, mariadb, redis or dynamodb, but was "mongodb"
            store:\\n  type: mariadb\\n  url: jdbc:postgresql://h/db\\n     | 3 | 8  | store.url must start with jdbc:mariadb:
            store:\\n  type: dynamodb\\n  url: dynamo.local\\n             | 3 | 8  | a dynamodb store.url is an endpoint, http:// or https://
            store:\\n  type: dynamodb\\n  key-prefix: gw\\n                | 3 | 15 | a dynamodb store has url, table and create-schema
            store:\\n  type: mariadb\\n  url: jdbc:mariadb://h/db\\n  wait-for-replicas: 1\\n | 4 | 22 | store.wait-for-replicas is for a redis store on store.url
            store:\\n  type: redis\\n  cluster-urls: [redis://h:1]\\n  wait-for-replicas: 1\\n | 4 | 22 | on a Redis Cluster a WAIT reaches one node
            idempotency:\\n  lease: 2d\\n                                     | 2 | 10 | idempotency.lease must not exceed the retention
            idempotency:\\n  stored-headers: [Set-Cookie]\\n                  | 2 | 19 | must not include credentials or cookies
            """)
    void aBadValueIsRefusedWithItsLineColumnAndReason(String override, int line, int column, String reason) {
        String section = override.replace("\\n", "\n");
        String top = section.substring(0, section.indexOf(':'));
        String yaml = section + without(MINIMAL, top);

        ConfigException e = refusal(yaml);

        assertThat(e.reason()).contains(reason);
        assertThat(e.line()).isEqualTo(line);
        assertThat(e.column()).isEqualTo(column);
        assertThat(e.getMessage()).startsWith("gateway.yaml:" + line + ":" + column + ": ");
    }

    @Test
    void notYamlIsRefusedWhereTheParserStopped() {
        ConfigException e = refusal("routes:\n  - method: POST\n    path: [/a\n");

        assertThat(e.reason()).startsWith("not valid YAML");
        assertThat(e.line()).isEqualTo(4);
    }

    @Test
    void aRouteNeedsAValidPatternAndAnUpstream() {
        ConfigException pattern = refusal(MINIMAL.replace("path: /payments", "path: /payments/*.json"));
        assertThat(pattern.reason()).contains("routes[0]: pattern segments must be literal, {name}, or a final **");
        assertThat(pattern.line()).isEqualTo(11);

        ConfigException upstream = refusal(without(MINIMAL, "upstream"));
        assertThat(upstream.reason()).isEqualTo("routes[0] needs an upstream: give upstream.url, or upstream in the route");
    }

    @Test
    void exactlyOneScopeSource() {
        ConfigException none = refusal(MINIMAL.replace("  trusted-header:\n    name: X-Tenant\n", "  {}\n"));
        assertThat(none.reason()).contains("scope must have exactly one of basic, jwt, trusted-header, but had none");

        ConfigException two = refusal(MINIMAL.replace("  trusted-header:", "  basic: { users-file: users.txt }\n"
                + "  trusted-header:"));
        assertThat(two.reason()).contains("but had basic and trusted-header");

        ConfigException missing = refusal(without(MINIMAL, "scope"));
        assertThat(missing.reason()).startsWith("scope is required (or one in each route)");

        GatewayConfig perRoute = parse(without(MINIMAL, "scope").replace("    path: /payments\n",
                "    path: /payments\n    scope:\n      trusted-header: { name: X-Caller }\n"));
        assertThat(perRoute.scope()).isEmpty();
        assertThat(perRoute.routes().get(0).scope()).isEqualTo(new HeaderScope("X-Caller"));
    }

    @Test
    void aUsersFileThatCannotBeReadIsRefusedAtItsLine() {
        ConfigException e = refusal(MINIMAL.replace("  trusted-header:\n    name: X-Tenant\n",
                "  basic:\n    users-file: missing.txt\n"));

        assertThat(e.line()).isEqualTo(5);
        assertThat(e.reason()).startsWith("scope.basic.users-file names a file that cannot be read");
    }

    @Test
    void aRedisStoreNeedsARedisUrl() {
        ConfigException e = refusal(MINIMAL.replace("type: postgresql", "type: redis").replace(
                "jdbc:postgresql://127.0.0.1:5432/app", "http://127.0.0.1:6379"));

        assertThat(e.reason()).contains("a redis URL starts with redis://, rediss:// or redis-sentinel://");
    }

    @Test
    void aBadUsersFileLineIsRefusedWithItsLine() throws IOException {
        Files.writeString(dir.resolve("bad-users.txt"), "# users\nalice:plaintext\n");

        assertThatThrownBy(() -> BasicAuthScope.fromFile(dir.resolve("bad-users.txt")))
                .isInstanceOfSatisfying(ConfigException.class, e -> {
                    assertThat(e.line()).isEqualTo(2);
                    assertThat(e.reason()).contains("name:bcrypt-hash");
                });
    }

    @Test
    void aMissingFileIsRefusedWithoutAStackTraceInItsMessage() {
        assertThatThrownBy(() -> ConfigLoader.load(dir.resolve("nope.yaml"), Map.of()))
                .isInstanceOf(ConfigException.class).hasMessageContaining("cannot read the configuration file");
    }

    /** The YAML without the top-level section {@code key} (up to the next top-level key). */
    private static String without(String yaml, String key) {
        StringBuilder out = new StringBuilder();
        boolean skipping = false;
        for (String line : yaml.split("\n")) {
            if (!line.startsWith(" ") && !line.startsWith("-")) {
                skipping = line.startsWith(key + ":");
            }
            if (!skipping) {
                out.append(line).append('\n');
            }
        }
        return out.toString();
    }
}
