package io.retrysafe.spring;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.util.ClassUtils;

/**
 * What an AOT-processed application (a native image in particular) needs of RetrySafe beyond its beans:
 * the stores read their SQL schemas and Lua scripts as class path resources. Registered through
 * {@code META-INF/spring/aot.factories}. The types {@link Idempotent} methods take and return are
 * registered by {@link IdempotentReflectiveProcessor}; {@code retrysafe.*} binding, the actuator endpoint
 * and the exception handler are covered by Spring Boot's own hints.
 */
class RetrySafeRuntimeHints implements RuntimeHintsRegistrar {
    /** {@code JdbcIdempotencyStore.createSchema()}, {@code JdbcAdmin} and the CLI's {@code schema} read these. */
    static final String JDBC_SCHEMAS = "io/retrysafe/jdbc/*.sql";
    /** The Redis store and fast filter load one script per step. */
    static final String REDIS_SCRIPTS = "io/retrysafe/redis/*.lua";

    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        hints.resources().registerPattern(JDBC_SCHEMAS);
        // retrysafe-store-redis is optional: only an application that has it ships its scripts.
        if (ClassUtils.isPresent("io.retrysafe.redis.RedisIdempotencyStore", classLoader)) {
            hints.resources().registerPattern(REDIS_SCRIPTS);
        }
    }
}
