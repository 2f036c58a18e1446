package io.retrysafe.spring;

import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSettings;
import java.lang.System.Logger.Level;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.Supplier;
import org.springframework.util.ClassUtils;

/**
 * {@code retrysafe.http.*} and {@code retrysafe.key.*} read once for both filters: the routes (each with
 * its own policy where it sets one), the limits, the replayed headers and the scope setting, which each
 * stack turns into its own resolver. The servlet filter and the WebFlux filter so protect the same routes
 * with the same rules from the same properties.
 */
final class HttpConfigurer {
    private static final System.Logger LOG = System.getLogger(HttpConfigurer.class.getName());

    private HttpConfigurer() {
    }

    /** The stack's four kinds of scope resolver, for {@link #scope}; each but the principal's takes a name. */
    record Scopes<R>(Supplier<R> principal, Function<String, R> header, Function<String, R> hashedHeader,
            Function<String, R> global) {
    }

    /**
     * A filter's settings ({@link HttpSettings.Builder}, the servlet filter's or the WebFlux filter's):
     * the scope, key rules, limits, replayed headers and routes. Without configured routes the builder's
     * default applies (POST and PATCH everywhere, when they carry a key).
     *
     * @param enginePolicy the engine's policy, which a route with its own retention or {@code at-rest} starts from
     */
    static <S, B extends HttpSettings.Builder<S, B>> B configure(B builder, RetrySafeProperties properties, S scope,
            KeyRules keyRules, OperationPolicy enginePolicy, StoredResponseProtection protection) {
        RetrySafeProperties.Http http = properties.http();
        builder.scope(scope).keyRules(keyRules).maxRequestBytes(http.maxRequestBytes())
                .maxResponseBytes(http.maxResponseBytes());
        if (http.replayedHeaders() != null) {
            builder.replayedHeaders(http.replayedHeaders());
        }
        if (http.routes() != null) {
            for (RetrySafeProperties.Route r : http.routes()) {
                builder.route(route(r, enginePolicy, protection));
            }
        }
        return builder;
    }

    private static HttpRoute route(RetrySafeProperties.Route r, OperationPolicy enginePolicy,
            StoredResponseProtection protection) {
        HttpRoute.Builder route = HttpRoute.of(r.method(), r.pattern()).keyRequired(r.keyRequired());
        if (r.retention() != null || r.atRest() != null) {
            OperationPolicy.Builder policy = OperationPolicy.from(enginePolicy);
            if (r.retention() != null) {
                policy.retention(r.retention());
            }
            if (r.atRest() != null) {
                policy.protection(r.atRest() ? protection : StoredResponseProtection.NONE);
            }
            route.policy(policy.build());
        }
        if (r.jsonMembers() != null && !r.jsonMembers().isEmpty()) {
            route.jsonMembers(r.jsonMembers().toArray(String[]::new));
        }
        return route.build();
    }

    /**
     * The resolver {@code retrysafe.http.scope} names, made by the stack's {@code scopes}.
     *
     * @param resolverType the stack's resolver type, for the message when Spring Security is missing
     * @param securityClass a class of Spring Security's that the stack's principal scope needs
     * @param docs where the page explaining the alternatives is, for that message
     */
    static <R> R scope(RetrySafeProperties properties, Scopes<R> scopes, Class<R> resolverType, String securityClass,
            String docs) {
        RetrySafeProperties.Http http = properties.http();
        String scope = http.scope().toLowerCase(Locale.ROOT);
        return switch (scope) {
            case "principal" -> {
                if (!ClassUtils.isPresent(securityClass, HttpConfigurer.class.getClassLoader())) {
                    throw new IllegalStateException("retrysafe.http.scope=principal (the default) scopes keys to the "
                            + "authenticated user, but there is no Spring Security to authenticate one: add it, define "
                            + "a " + resolverType.getSimpleName() + " bean, set retrysafe.http.scope=header with "
                            + "retrysafe.http.scope-header (a tenant header your gateway sets) or "
                            + "retrysafe.http.scope=hashed-header (an API key), "
                            + "or, for a single trusted caller only, retrysafe.http.scope=global (" + docs + ")");
                }
                yield scopes.principal().get();
            }
            case "header" -> {
                String header = requireHeader(http);
                LOG.log(Level.WARNING, () -> "[" + properties.name() + "] retrysafe.http.scope=header: keys are scoped "
                        + "to the value of " + header + " as the request carries it; safe only behind a gateway that "
                        + "sets it and drops the client's own, else a caller can name another's scope and get its "
                        + "answers (hashed-header, or the principal, do not depend on that)");
                yield scopes.header().apply(header);
            }
            case "hashed-header" -> scopes.hashedHeader().apply(requireHeader(http));
            case "global" -> {
                LOG.log(Level.WARNING, () -> "[" + properties.name() + "] retrysafe.http.scope=global: every caller "
                        + "shares one key space, so a caller that reuses another's key gets that caller's answer; "
                        + "only for a single trusted caller");
                yield scopes.global().apply(properties.name());
            }
            default -> throw new IllegalArgumentException("retrysafe.http.scope must be principal, header, hashed-header "
                    + "or global, but was " + http.scope());
        };
    }

    private static String requireHeader(RetrySafeProperties.Http http) {
        if (http.scopeHeader() == null || http.scopeHeader().isBlank()) {
            throw new IllegalArgumentException("retrysafe.http.scope=" + http.scope()
                    + " needs retrysafe.http.scope-header, but it was not set");
        }
        return http.scopeHeader();
    }
}
