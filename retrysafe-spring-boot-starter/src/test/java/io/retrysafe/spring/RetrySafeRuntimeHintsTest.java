package io.retrysafe.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.annotation.ReflectiveRuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.core.io.support.SpringFactoriesLoader;

/** The hints an AOT-processed application gets from the starter, checked as a native image build reads them. */
class RetrySafeRuntimeHintsTest {
    private final RuntimeHints hints = new RuntimeHints();

    @Test
    void theStartersRegistrarIsFoundWhereAotProcessingLooksForRegistrars() {
        List<RuntimeHintsRegistrar> registrars = SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class);
        assertThat(registrars).hasAtLeastOneElementOfType(RetrySafeRuntimeHints.class);
    }

    @Test
    void everySqlSchemaAndLuaScriptShippedInTheStoresJarsIsIncluded() throws IOException {
        new RetrySafeRuntimeHints().registerHints(hints, getClass().getClassLoader());
        List<String> shipped = new ArrayList<>();
        shipped.addAll(resources("io/retrysafe/jdbc/*.sql"));
        shipped.addAll(resources("io/retrysafe/redis/*.lua"));
        // The files the stores read today; a new one is covered by the pattern, and listed here by the scan.
        assertThat(shipped).contains("io/retrysafe/jdbc/schema-postgresql.sql",
                "io/retrysafe/jdbc/schema-postgresql-partitioned.sql", "io/retrysafe/jdbc/schema-mariadb.sql",
                "io/retrysafe/redis/claim.lua", "io/retrysafe/redis/complete.lua", "io/retrysafe/redis/release.lua",
                "io/retrysafe/redis/fast-filter-clear.lua");
        assertThat(shipped).allSatisfy(resource ->
                assertThat(RuntimeHintsPredicates.resource().forResource(resource)).as(resource).accepts(hints));
        assertThat(RuntimeHintsPredicates.resource().forResource("io/retrysafe/jdbc/other.txt")).rejects(hints);
    }

    @Test
    void anIdempotentMethodIsKeptWithTheTypesItTakesAndReturnsBoundAsJson() throws NoSuchMethodException {
        new ReflectiveRuntimeHintsRegistrar().registerRuntimeHints(hints, Orders.class);
        assertThat(RuntimeHintsPredicates.reflection().onMethod(Orders.class.getMethod("pay", String.class,
                PaymentRequest.class))).accepts(hints);
        for (Class<?> bound : List.of(PaymentRequest.class, Receipt.class, Money.class)) {
            assertThat(RuntimeHintsPredicates.reflection().onType(bound)
                    .withMemberCategories(MemberCategory.INVOKE_DECLARED_CONSTRUCTORS)).as(bound.getName()).accepts(hints);
        }
        // Record components are read through their accessors.
        assertThat(RuntimeHintsPredicates.reflection().onMethod(Receipt.class.getMethod("amount"))).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onType(Unrelated.class)).rejects(hints);
    }

    private static List<String> resources(String pattern) throws IOException {
        List<String> names = new ArrayList<>();
        for (Resource r : new PathMatchingResourcePatternResolver().getResources("classpath*:" + pattern)) {
            names.add(pattern.substring(0, pattern.lastIndexOf('/') + 1) + r.getFilename());
        }
        return names;
    }

    static class Orders {
        @Idempotent(key = "#orderNumber")
        public Receipt pay(String orderNumber, PaymentRequest request) {
            return new Receipt(orderNumber, request.amount());
        }

        public Map<String, Unrelated> notIdempotent() {
            return Map.of();
        }
    }

    record PaymentRequest(String account, Money amount) {
    }

    record Receipt(String orderNumber, Money amount) {
    }

    record Money(long cents) {
    }

    record Unrelated(String value) {
    }
}
