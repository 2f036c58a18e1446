package io.retrysafe.jaxrs;

import io.retrysafe.RetrySafe;
import io.retrysafe.internal.Require;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.core.Feature;
import jakarta.ws.rs.core.FeatureContext;
import jakarta.ws.rs.ext.Providers;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Supplier;

/**
 * The servlet filter's Idempotency-Key semantics for a Jakarta REST application, on any implementation: the same
 * routes, scopes, fingerprint, bounds, replays and RFC 9457 problems, decided by {@code retrysafe-http}. Register
 * it with the application ({@code register(RetrySafeFeature.standalone(config, engine))}); it adds
 *
 * <ul>
 * <li>a request filter at {@link #PRIORITY}, after authentication, which reads the key, the caller and the body
 *     (up to {@code maxRequestBytes}), and claims the key, or answers a replay or a refusal without running the
 *     resource;
 * <li>a response filter, which writes the resource's entity to bytes, records the response (in transactional
 *     mode, commits it with the resource's writes) and only then lets it go out: a failed commit answers
 *     {@code 503}, never the resource's success;
 * <li>an exception mapper for exceptions no mapper of the application's maps, so that a resource that throws
 *     releases its key (its transaction rolled back) and answers {@code 500}, as the container would: without it,
 *     Jakarta REST runs no response filter and the key would stay claimed. A {@code WebApplicationException}
 *     keeps its own response.
 * </ul>
 *
 * The response is held whole in memory until its outcome is recorded; one over {@code maxResponseBytes} is still
 * sent whole, but stored without its body, as the servlet filter stores it.
 */
public final class RetrySafeFeature implements Feature {
    /** The filters' priority: after authentication and authorization, before the application's own filters. */
    public static final int PRIORITY = Priorities.AUTHORIZATION + 500;

    private final Supplier<IdempotencyFilter.Protection> protection;
    private final Supplier<Providers> providers;

    private RetrySafeFeature(JaxrsIdempotency config, Mode mode) {
        IdempotencyFilter.Protection built = new IdempotencyFilter.Protection(Require.notNull(config, "config")
                .settings(), mode);
        this.protection = () -> built;
        this.providers = null;
    }

    private RetrySafeFeature(Supplier<IdempotencyFilter.Protection> protection, Supplier<Providers> providers) {
        this.protection = protection;
        this.providers = providers;
    }

    /** Standalone mode on {@code engine}: the claim commits before the resource runs, the response after. */
    public static RetrySafeFeature standalone(JaxrsIdempotency config, RetrySafe engine) {
        return new RetrySafeFeature(config, new Mode.Standalone(Require.notNull(engine, "engine")));
    }

    /**
     * Transactional mode: each protected request takes a connection from {@code transactional.dataSource()}, claims
     * its key on it, and the resource's writes on {@link #connection()} commit with the key and the response.
     */
    public static RetrySafeFeature transactional(JaxrsIdempotency config, TransactionalRetrySafe transactional) {
        return new RetrySafeFeature(config, new Mode.Transactional(Require.notNull(transactional, "transactional")));
    }

    /**
     * A feature whose filters ask {@code feature} for their configuration on the first request they see, and keep
     * it: for a runtime that registers providers before the application's configuration and data sources exist
     * (Quarkus REST builds its deployment while the application is being initialised). {@code feature} returning
     * null leaves every request unprotected; one that throws fails the request, and is asked again on the next.
     *
     * @param providers the runtime's {@code Providers}, where the response filter finds the entity's writer: such a
     *     runtime may not inject {@code @Context} into the instances a feature registers
     */
    public static RetrySafeFeature deferred(Supplier<RetrySafeFeature> feature, Supplier<Providers> providers) {
        return new RetrySafeFeature(new Deferred(Require.notNull(feature, "feature")),
                Require.notNull(providers, "providers"));
    }

    /**
     * Transactional mode: the connection of the transaction the protected request runs in, for the resource's
     * writes. Valid on the thread that runs the resource method, until the response is recorded; the resource must
     * neither commit nor close it.
     *
     * @throws IllegalStateException outside a protected request in transactional mode
     */
    public static Connection connection() {
        Connection c = Mode.Transactional.CONNECTION.get();
        try {
            if (c != null && !c.isClosed()) {
                return c;
            }
        } catch (SQLException e) {
            throw new IllegalStateException("the transaction's connection is broken: " + e.getMessage(), e);
        }
        throw new IllegalStateException("no transaction here: connection() is for the resource method of a request "
                + "that RetrySafeFeature.transactional(...) protects, on the thread that runs it");
    }

    @Override
    public boolean configure(FeatureContext context) {
        context.register(new IdempotencyFilter(protection, providers), PRIORITY);
        // Below the default priority: an application's own mapper of Throwable is the one chosen.
        context.register(new EscapedExceptions(), Priorities.USER + 1000);
        return true;
    }

    /** The configuration {@link #deferred} asks for once, on the first request. */
    private static final class Deferred implements Supplier<IdempotencyFilter.Protection> {
        private final Supplier<RetrySafeFeature> feature;
        private volatile boolean resolved;
        private IdempotencyFilter.Protection protection;

        Deferred(Supplier<RetrySafeFeature> feature) {
            this.feature = feature;
        }

        @Override
        public IdempotencyFilter.Protection get() {
            if (!resolved) {
                synchronized (this) {
                    if (!resolved) {
                        RetrySafeFeature f = feature.get();
                        protection = f == null ? null : f.protection.get();
                        resolved = true;
                    }
                }
            }
            return protection;
        }
    }
}
