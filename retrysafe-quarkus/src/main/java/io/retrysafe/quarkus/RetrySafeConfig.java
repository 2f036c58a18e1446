package io.retrysafe.quarkus;

import io.quarkus.runtime.annotations.ConfigPhase;
import io.quarkus.runtime.annotations.ConfigRoot;
import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code retrysafe.*} in {@code application.properties}: what the extension protects and how. Read once at start-up;
 * the defaults are the library's {@code DEFAULT_*} constants.
 */
@ConfigMapping(prefix = "retrysafe")
@ConfigRoot(phase = ConfigPhase.RUN_TIME)
public interface RetrySafeConfig {

    /** Whether the extension protects anything at all; off, no filter runs and no connection is taken. */
    @WithDefault("true")
    boolean enabled();

    /** The engine's name: the prefix of its log lines. */
    @WithDefault("retrysafe")
    String name();

    /**
     * {@code transactional}: the key, the resource's writes on {@code RetrySafeFeature.connection()} and the response
     * commit in one transaction of the datasource. {@code standalone}: the key commits before the resource runs, the
     * response after, for side effects outside the database.
     */
    @WithDefault("transactional")
    Mode mode();

    /** The Agroal datasource of the records (and, in transactional mode, of the resource's writes); not set: the default one. */
    Optional<String> datasource();

    /** The records table. */
    Store store();

    /** How long records live and how duplicates in flight are answered. */
    Policy policy();

    /** The rules an {@code Idempotency-Key} must meet. */
    Key key();

    /** The protected routes, whose keys they are, and the bounds. */
    Http http();

    /** How a protected request runs under its key. */
    enum Mode {
        /** One transaction for the key, the resource's writes and the response. */
        TRANSACTIONAL,
        /** The key commits first, as the record of an attempt in progress. */
        STANDALONE
    }

    /** Whose intent a key names. */
    enum Scope {
        /** The authenticated principal of the request's {@code SecurityContext}. */
        PRINCIPAL,
        /** The value of {@code retrysafe.http.scope-header}, e.g. a tenant id a gateway set. */
        HEADER,
        /** The SHA-256 of {@code retrysafe.http.scope-header}, e.g. an API key. */
        HASHED_HEADER,
        /** One scope for every caller; only for a single trusted caller. */
        GLOBAL
    }

    /** The JDBC store. */
    interface Store {
        /** The records table, optionally schema-qualified. */
        @WithDefault("retrysafe_record")
        String table();

        /** Create the table at start-up if it is missing; a production service ships it in its migrations instead. */
        @WithDefault("false")
        boolean initializeSchema();

        /** How long a duplicate waits on the first request's row lock (transactional mode) before 409. */
        @WithDefault("5s")
        Duration lockTimeout();
    }

    /** The engine's policy. */
    interface Policy {
        /** How long a record is kept, and a key replays. */
        @WithDefault("24h")
        Duration retention();

        /** Standalone mode: how long an attempt holds its key before another may take it over. */
        @WithDefault("30s")
        Duration leaseTtl();

        /** Standalone mode: how long a duplicate waits for the attempt in flight to finish before 409. */
        @WithDefault("0s")
        Duration waitForResult();

        /** The {@code Retry-After} of a 409 and a 503. */
        @WithDefault("1s")
        Duration retryAfter();
    }

    /** The key rules. */
    interface Key {
        /** The shortest accepted key. */
        @WithDefault("1")
        int minLength();

        /** The longest accepted key (at most 255). */
        @WithDefault("255")
        int maxLength();
    }

    /** The HTTP front door. */
    interface Http {
        /** Whose intent a key names. */
        @WithDefault("principal")
        Scope scope();

        /** The header of {@code header} and {@code hashed-header} scopes. */
        Optional<String> scopeHeader();

        /**
         * The protected routes by a name of your choice ({@code retrysafe.http.routes.payments.pattern=/payments});
         * none: POST and PATCH everywhere, when they carry a key.
         */
        Map<String, Route> routes();

        /** The largest body fingerprinted; a larger one gets 413 and runs nothing. */
        @WithDefault("1048576")
        int maxRequestBytes();

        /** The largest response body stored for replay; a larger one is stored without its body. */
        @WithDefault("1048576")
        int maxResponseBytes();

        /** The response headers stored and replayed; not set: the library's list. Credentials and cookies never are. */
        Optional<Set<String>> replayedHeaders();
    }

    /** One protected route. */
    interface Route {
        /** The HTTP method. */
        @WithDefault("POST")
        String method();

        /** The path within the application: literal segments, {@code {name}}, a final {@code **}. */
        String pattern();

        /** Refuse a request without a key (400) instead of letting it through unprotected. */
        @WithDefault("true")
        boolean keyRequired();

        /** This route's retention, when it differs from {@code retrysafe.policy.retention}. */
        Optional<Duration> retention();

        /** JSON Pointers of the members the fingerprint covers; not set: the whole body. */
        Optional<List<String>> jsonMembers();

        /** Request headers the fingerprint covers. */
        Optional<List<String>> fingerprintHeaders();
    }
}
