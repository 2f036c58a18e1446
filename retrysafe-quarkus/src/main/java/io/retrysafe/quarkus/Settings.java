package io.retrysafe.quarkus;

import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.jaxrs.JaxrsIdempotency;
import io.retrysafe.jaxrs.JaxrsScopeResolver;
import java.util.Map;

/** Turns {@code retrysafe.*} into the Jakarta REST filters' settings and the engine's policy. */
final class Settings {

    private Settings() {
    }

    static OperationPolicy policy(RetrySafeConfig.Policy policy) {
        return OperationPolicy.custom().retention(policy.retention()).leaseTtl(policy.leaseTtl())
                .waitForResult(policy.waitForResult()).retryAfter(policy.retryAfter()).build();
    }

    static JaxrsIdempotency jaxrs(RetrySafeConfig config, OperationPolicy enginePolicy) {
        RetrySafeConfig.Http http = config.http();
        JaxrsIdempotency.Builder builder = JaxrsIdempotency.custom()
                .scope(scope(http))
                .keyRules(KeyRules.custom().minLength(config.key().minLength()).maxLength(config.key().maxLength())
                        .build())
                .maxRequestBytes(http.maxRequestBytes())
                .maxResponseBytes(http.maxResponseBytes());
        http.replayedHeaders().ifPresent(builder::replayedHeaders);
        // Sorted by name: the first matching route wins, so the order must not depend on a map's iteration.
        http.routes().entrySet().stream().sorted(Map.Entry.comparingByKey())
                .forEach(e -> builder.route(route(e.getValue(), enginePolicy)));
        return builder.build();
    }

    private static HttpRoute route(RetrySafeConfig.Route r, OperationPolicy enginePolicy) {
        HttpRoute.Builder route = HttpRoute.of(r.method(), r.pattern()).keyRequired(r.keyRequired());
        r.retention().ifPresent(retention -> route.policy(OperationPolicy.from(enginePolicy).retention(retention)
                .build()));
        r.jsonMembers().ifPresent(members -> route.jsonMembers(members.toArray(String[]::new)));
        r.fingerprintHeaders().ifPresent(names -> route.fingerprintHeaders(names.toArray(String[]::new)));
        return route.build();
    }

    private static JaxrsScopeResolver scope(RetrySafeConfig.Http http) {
        return switch (http.scope()) {
            case PRINCIPAL -> JaxrsScopeResolver.principal();
            case HEADER -> JaxrsScopeResolver.header(scopeHeader(http));
            case HASHED_HEADER -> JaxrsScopeResolver.hashedHeader(scopeHeader(http));
            case GLOBAL -> JaxrsScopeResolver.global("quarkus");
        };
    }

    private static String scopeHeader(RetrySafeConfig.Http http) {
        return http.scopeHeader().orElseThrow(() -> new IllegalArgumentException("retrysafe.http.scope="
                + http.scope().name().toLowerCase(java.util.Locale.ROOT).replace('_', '-')
                + " needs retrysafe.http.scope-header, but it was not set"));
    }
}
