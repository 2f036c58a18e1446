package io.retrysafe.releasecheck;

import java.util.Set;

/** The modules a release deploys; CONTRIBUTING.md, Releases, says why these and no others. */
final class Published {
    /** The jar modules: what users depend on, and so the modules whose public API is recorded in {@code api/}. */
    static final Set<String> JARS = Set.of("retrysafe-core", "retrysafe-store-tck",
            "retrysafe-store-sql", "retrysafe-store-jdbc", "retrysafe-store-redis", "retrysafe-servlet", "retrysafe-client", "retrysafe-cli",
            "retrysafe-gateway", "retrysafe-micrometer", "retrysafe-inbox", "retrysafe-inbox-tck", "retrysafe-nats", "retrysafe-kafka", "retrysafe-spring-boot-starter",
            "retrysafe-spring-boot3-starter", "retrysafe-rabbitmq", "retrysafe-http", "retrysafe-webflux", "retrysafe-store-r2dbc",
            "retrysafe-store-dynamodb", "retrysafe-jaxrs", "retrysafe-grpc",
            "retrysafe-quarkus", "retrysafe-quarkus-deployment");
    static final Set<String> POMS = Set.of("retrysafe-parent", "retrysafe-bom", "retrysafe-spring-boot3-parent");

    private Published() {
    }
}
