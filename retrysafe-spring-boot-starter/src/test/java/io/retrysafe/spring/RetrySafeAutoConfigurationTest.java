package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.KeyRules;
import io.retrysafe.OperationPolicy;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.KeyOrder;
import io.retrysafe.jdbc.PurgeResult;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.servlet.IdempotentRoute;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.servlet.ScopeResolver;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.AbstractApplicationContextRunner;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.core.Ordered;
import org.springframework.mock.web.MockHttpServletRequest;

/**
 * What the starter puts into an application context, for each kind of application: which store,
 * which mode, which beans back off, how {@code retrysafe.*} reaches the engine and the filter, and
 * which mistakes stop the application with a message that says what to do.
 */
class RetrySafeAutoConfigurationTest {

    private static final AutoConfigurations RETRYSAFE = AutoConfigurations.of(
            RetrySafeMicrometerAutoConfiguration.class, RetrySafeAutoConfiguration.class,
            RetrySafeWebAutoConfiguration.class, RetrySafePurgeAutoConfiguration.class,
            RetrySafeIdempotentAutoConfiguration.class);

    private static final AutoConfigurations JDBC = AutoConfigurations.of(BootLine.DATA_SOURCE,
            BootLine.DATA_SOURCE_TRANSACTION_MANAGER);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON)).withConfiguration(RETRYSAFE);

    private final WebApplicationContextRunner webRunner = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON)).withConfiguration(RETRYSAFE);

    /** The application's own DataSource and transaction manager, as Boot makes them from {@code spring.datasource.*}. */
    private static <R extends AbstractApplicationContextRunner<R, ?, ?>> R withPostgres(R runner) {
        return runner.withConfiguration(JDBC).withPropertyValues("spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                "spring.datasource.username=" + TestDatabases.postgresUser(),
                "spring.datasource.password=" + TestDatabases.postgresPassword());
    }

    private static Outcome<String> executeOnce(RetrySafe retrySafe, String key, String result) {
        return retrySafe.execute(IdempotencyKey.of("test", key), Fingerprint.sha256("request".getBytes(UTF_8)),
                ResponseCodec.utf8(), attempt -> result);
    }

    @Nested
    class Store {

        @Test
        void withoutDataSourceTheEngineRunsOnTheInMemoryStore() {
            runner.run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).doesNotHaveBean(DataSource.class);
                assertThat(context).hasSingleBean(InMemoryIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(JdbcIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(TransactionalRetrySafe.class);
                RetrySafe retrySafe = context.getBean(RetrySafe.class);
                assertThat(retrySafe.store()).isSameAs(context.getBean(IdempotencyStore.class));

                String key = UUID.randomUUID().toString();
                assertThat(executeOnce(retrySafe, key, "first")).isInstanceOf(Outcome.Executed.class);
                Outcome<String> retry = executeOnce(retrySafe, key, "second");
                assertThat(retry).isInstanceOf(Outcome.Replayed.class);
                assertThat(retry.orThrow()).isEqualTo("first");
            });
        }

        @Test
        void withDataSourceTheEngineRunsOnTheJdbcStoreInTransactionalMode() {
            withPostgres(runner).run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(JdbcIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(InMemoryIdempotencyStore.class);
                JdbcIdempotencyStore store = context.getBean(JdbcIdempotencyStore.class);
                assertThat(store.dataSource()).isSameAs(context.getBean(DataSource.class));
                assertThat(store.table()).isEqualTo(JdbcIdempotencyStore.DEFAULT_TABLE);
                assertThat(store.lockTimeout()).isEqualTo(JdbcIdempotencyStore.DEFAULT_LOCK_TIMEOUT);
                assertThat(context.getBean(RetrySafe.class).store()).isSameAs(store);
                assertThat(context).hasSingleBean(TransactionalRetrySafe.class);
                assertThat(context.getBean(TransactionalRetrySafe.class).engine().store()).isSameAs(store);
                assertThat(context.getBean(TransactionalRetrySafe.class).keyOrder()).isEqualTo(KeyOrder.FIRST);
            });
        }

        @Test
        void theKeyIsWrittenLastOnRequestAndOnlyWhereAUniqueIndexAllowsIt() {
            withPostgres(runner).withPropertyValues("retrysafe.store.key-order=last").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context.getBean(TransactionalRetrySafe.class).keyOrder()).isEqualTo(KeyOrder.LAST);
            });
            withPostgres(runner).withPropertyValues("retrysafe.store.key-order=last-no-lookup").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context.getBean(TransactionalRetrySafe.class).keyOrder())
                        .isEqualTo(KeyOrder.LAST_NO_LOOKUP);
            });
            withPostgres(runner).withPropertyValues("retrysafe.store.key-order=last-no-lookup",
                    "retrysafe.store.layout=partitioned").run(context -> assertThat(context).getFailure().rootCause()
                            .isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("the key can be written last only on PostgreSQL's standard layout"));
            withPostgres(runner).withPropertyValues("retrysafe.store.key-order=last", "retrysafe.store.layout=partitioned")
                    .run(context -> assertThat(context).getFailure().rootCause()
                            .isInstanceOf(IllegalArgumentException.class)
                            .hasMessageContaining("the key can be written last only on PostgreSQL's standard layout"));
        }

        @Test
        void standaloneModeKeepsTheJdbcStoreButNotTheTransactionalMode() {
            withPostgres(runner).withPropertyValues("retrysafe.mode=standalone").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(JdbcIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(TransactionalRetrySafe.class);
            });
        }

        @Test
        void failOpenIsRefusedInTransactionalMode() {
            withPostgres(runner).withPropertyValues("retrysafe.fail-open=true").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause()
                        .hasMessageContaining("transactional mode cannot fail open");
            });
        }

        @Test
        void memoryStoreTypeIgnoresTheDataSource() {
            withPostgres(runner).withPropertyValues("retrysafe.store.type=memory").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(DataSource.class);
                assertThat(context).hasSingleBean(InMemoryIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(JdbcIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(TransactionalRetrySafe.class);
                assertThat(context).doesNotHaveBean(RetrySafePurgeScheduler.class);
            });
        }

        @Test
        void jdbcStoreTypeWithoutDataSourceFailsWithWhatIsMissing() {
            runner.withPropertyValues("retrysafe.store.type=jdbc").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause()
                        .hasMessageContaining("retrysafe.store.type=jdbc needs exactly one DataSource bean");
            });
        }

        @Test
        void initializeSchemaCreatesTheConfiguredTable() throws Exception {
            String table = "rs_autoconfig_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
            try {
                withPostgres(runner).withPropertyValues("retrysafe.store.table=" + table,
                        "retrysafe.store.initialize-schema=true").run(context -> {
                            assertThat(context).hasNotFailed();
                            assertThat(context.getBean(JdbcIdempotencyStore.class).table()).isEqualTo(table);
                            assertThat(tableExists(context.getBean(DataSource.class), table)).isTrue();
                        });
            } finally {
                try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS " + table);
                }
            }
        }

        @Test
        void partitionedLayoutGetsItsTableAndItsDaysAheadAtStart() throws Exception {
            String table = "rs_autoconfig_p_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
            try {
                withPostgres(runner).withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                        .withPropertyValues("retrysafe.store.table=" + table,
                        "retrysafe.store.initialize-schema=true", "retrysafe.store.layout=partitioned",
                        "retrysafe.store.partition-days-ahead=2").run(context -> {
                            assertThat(context).hasNotFailed();
                            JdbcIdempotencyStore store = context.getBean(JdbcIdempotencyStore.class);
                            assertThat(store.layout()).isEqualTo(JdbcLayout.PARTITIONED_BY_EXPIRY_DAY);
                            DataSource ds = context.getBean(DataSource.class);
                            // The scheduler maintains the partitions once at start, on its own thread: today + 2.
                            await().atMost(Duration.ofSeconds(30)).until(() -> dayPartitions(ds, table) >= 3);
                            assertThat(dayPartitions(ds, table)).as("day partitions of " + table).isEqualTo(3);
                            // The run reports to the meters once it is over, just after its last partition.
                            MeterRegistry registry = context.getBean(MeterRegistry.class);
                            await().atMost(Duration.ofSeconds(30)).until(
                                    () -> registry.find(MicrometerRetrySafeListener.PARTITIONS_LAST_RUN).gauge() != null);
                            assertThat(registry.get(MicrometerRetrySafeListener.PARTITIONS_CREATED).counter().count())
                                    .isEqualTo(3);
                            assertThat(registry.get(MicrometerRetrySafeListener.PARTITIONS_DEFAULT_ROWS).gauge().value())
                                    .isZero();
                            assertThat(registry.get(MicrometerRetrySafeListener.PARTITIONS_LAST_RUN).gauge().value())
                                    .isPositive();
                        });
            } finally {
                try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS " + table);
                }
            }
        }

        private static long dayPartitions(DataSource dataSource, String table) throws Exception {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT count(*) FROM pg_inherits i JOIN pg_class k ON k.oid = i.inhrelid"
                            + " WHERE i.inhparent = to_regclass('" + table + "') AND k.relname <> '" + table + "_pdefault'")) {
                rs.next();
                return rs.getLong(1);
            }
        }

        private static boolean tableExists(DataSource dataSource, String table) throws Exception {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT to_regclass('" + table + "') IS NOT NULL")) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    @Nested
    class Disabled {

        @Test
        void disabledConfiguresNothing() {
            withPostgres(webRunner).withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                    .withPropertyValues("retrysafe.enabled=false").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).doesNotHaveBean(RetrySafeProperties.class);
                        assertThat(context).doesNotHaveBean(IdempotencyStore.class);
                        assertThat(context).doesNotHaveBean(RetrySafe.class);
                        assertThat(context).doesNotHaveBean(TransactionalRetrySafe.class);
                        assertThat(context).doesNotHaveBean(KeyRules.class);
                        assertThat(context).doesNotHaveBean(HttpIdempotency.class);
                        assertThat(context).doesNotHaveBean(IdempotentExecutor.class);
                        assertThat(context).doesNotHaveBean("retrySafeFilterRegistration");
                        assertThat(context).doesNotHaveBean(RetrySafePurgeScheduler.class);
                        assertThat(context).doesNotHaveBean(MicrometerRetrySafeListener.class);
                        assertThat(context).doesNotHaveBean("retrySafeIdempotentAdvisor");
                        assertThat(context).doesNotHaveBean(RetrySafeExceptionHandler.class);
                    });
        }

        @Test
        void httpDisabledKeepsTheEngineButRegistersNoFilter() {
            webRunner.withPropertyValues("retrysafe.http.enabled=false").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(RetrySafe.class);
                assertThat(context).doesNotHaveBean(HttpIdempotency.class);
                assertThat(context).doesNotHaveBean("retrySafeFilterRegistration");
            });
        }
    }

    @Nested
    class BackingOff {

        @Test
        void ownStoreReplacesBothStoresAndTheTransactionalMode() {
            InMemoryIdempotencyStore own = new InMemoryIdempotencyStore();
            withPostgres(runner).withBean("myStore", IdempotencyStore.class, () -> own).run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).getBean(IdempotencyStore.class).isSameAs(own);
                assertThat(context).doesNotHaveBean(JdbcIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(TransactionalRetrySafe.class);
                assertThat(context).doesNotHaveBean(RetrySafePurgeScheduler.class);
                assertThat(context.getBean(RetrySafe.class).store()).isSameAs(own);
            });
        }

        @Test
        void ownJdbcStoreIsUsedInTransactionalMode() {
            withPostgres(runner).withBean("myStore", JdbcIdempotencyStore.class,
                    () -> JdbcIdempotencyStore.builder(TestDatabases.postgres()).table("my_records").build())
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).hasSingleBean(IdempotencyStore.class);
                        JdbcIdempotencyStore own = context.getBean(JdbcIdempotencyStore.class);
                        assertThat(own.table()).isEqualTo("my_records");
                        assertThat(context.getBean(TransactionalRetrySafe.class).engine().store()).isSameAs(own);
                        assertThat(context).hasSingleBean(RetrySafePurgeScheduler.class);
                    });
        }

        @Test
        void ownEngineAndKeyRulesAreUsed() {
            RetrySafe own = RetrySafe.builder(new InMemoryIdempotencyStore()).name("mine").build();
            KeyRules rules = KeyRules.custom().minLength(8).build();
            webRunner.withBean(RetrySafe.class, () -> own).withBean(KeyRules.class, () -> rules)
                    .withPropertyValues("retrysafe.http.scope=global").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).getBean(RetrySafe.class).isSameAs(own);
                        assertThat(context).getBean(KeyRules.class).isSameAs(rules);
                        assertThat(context.getBean(HttpIdempotency.class).keyRules()).isSameAs(rules);
                    });
        }

        @Test
        void ownScopeResolverIsUsedAndTheDefaultPrincipalScopeIsNotChecked() {
            ScopeResolver tenant = request -> request.getHeader("X-Tenant");
            webRunner.withBean(ScopeResolver.class, () -> tenant).run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).getBean(ScopeResolver.class).isSameAs(tenant);
                assertThat(context.getBean(HttpIdempotency.class).scope()).isSameAs(tenant);
            });
        }

        @Test
        void ownFilterRegistrationReplacesOurs() {
            FilterRegistrationBean<RetrySafeFilter> own = new FilterRegistrationBean<>();
            webRunner.withPropertyValues("retrysafe.http.scope=global")
                    .withBean("retrySafeFilterRegistration", FilterRegistrationBean.class, () -> own)
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).getBean("retrySafeFilterRegistration").isSameAs(own);
                    });
        }
    }

    @Nested
    class Binding {

        @Test
        void durationsKeyLengthsAndNameReachTheEngine() {
            runner.withPropertyValues("retrysafe.name=orders", "retrysafe.policy.retention=7d",
                    "retrysafe.policy.lease-ttl=45s", "retrysafe.policy.wait-for-result=250ms",
                    "retrysafe.policy.retry-after=3s", "retrysafe.key.min-length=16", "retrysafe.key.max-length=64",
                    "retrysafe.fail-open=true", "retrysafe.store.max-entries=10", "retrysafe.store.max-bytes=2MB",
                    "retrysafe.store.scope-share-percent=25").run(context -> {
                        assertThat(context).hasNotFailed();
                        RetrySafe retrySafe = context.getBean(RetrySafe.class);
                        assertThat(retrySafe.name()).isEqualTo("orders");
                        assertThat(retrySafe.failOpen()).isTrue();
                        assertThat(retrySafe.policy().retention()).isEqualTo(Duration.ofDays(7));
                        assertThat(retrySafe.policy().leaseTtl()).isEqualTo(Duration.ofSeconds(45));
                        assertThat(retrySafe.policy().waitForResult()).isEqualTo(Duration.ofMillis(250));
                        assertThat(retrySafe.policy().retryAfter()).isEqualTo(Duration.ofSeconds(3));
                        KeyRules rules = context.getBean(KeyRules.class);
                        assertThat(rules.minLength()).isEqualTo(16);
                        assertThat(rules.maxLength()).isEqualTo(64);
                        InMemoryIdempotencyStore memory = context.getBean(InMemoryIdempotencyStore.class);
                        assertThat(memory.maxEntries()).isEqualTo(10);
                        assertThat(memory.maxBytes()).isEqualTo(2L * 1024 * 1024);
                        assertThat(memory.scopeSharePercent()).isEqualTo(25);
                    });
        }

        @Test
        void defaultsAreTheLibrarysDefaults() {
            runner.run(context -> {
                RetrySafe retrySafe = context.getBean(RetrySafe.class);
                assertThat(retrySafe.name()).isEqualTo(RetrySafe.DEFAULT_NAME);
                assertThat(retrySafe.failOpen()).isEqualTo(RetrySafe.DEFAULT_FAIL_OPEN);
                assertThat(retrySafe.policy().retention()).isEqualTo(OperationPolicy.DEFAULT_RETENTION);
                assertThat(retrySafe.policy().leaseTtl()).isEqualTo(OperationPolicy.DEFAULT_LEASE_TTL);
                assertThat(retrySafe.policy().waitForResult())
                        .isEqualTo(OperationPolicy.DEFAULT_WAIT_FOR_RESULT);
                assertThat(retrySafe.policy().retryAfter()).isEqualTo(OperationPolicy.DEFAULT_RETRY_AFTER);
                KeyRules rules = context.getBean(KeyRules.class);
                assertThat(rules.minLength()).isEqualTo(KeyRules.DEFAULT_MIN_LENGTH);
                assertThat(rules.maxLength()).isEqualTo(KeyRules.DEFAULT_MAX_LENGTH);
                assertThat(context.getBean(InMemoryIdempotencyStore.class).maxEntries())
                        .isEqualTo(InMemoryIdempotencyStore.DEFAULT_MAX_ENTRIES);
            });
        }

        @Test
        void storeSettingsReachTheJdbcStore() {
            withPostgres(runner).withPropertyValues("retrysafe.store.table=idem.records",
                    "retrysafe.store.lock-timeout=1500ms").run(context -> {
                        assertThat(context).hasNotFailed();
                        JdbcIdempotencyStore store = context.getBean(JdbcIdempotencyStore.class);
                        assertThat(store.table()).isEqualTo("idem.records");
                        assertThat(store.lockTimeout()).isEqualTo(Duration.ofMillis(1500));
                    });
        }

        @Test
        void routesAndHttpLimitsReachTheFilterConfiguration() {
            webRunner.withPropertyValues("retrysafe.http.scope=header", "retrysafe.http.scope-header=X-Tenant",
                    "retrysafe.http.max-request-bytes=2048", "retrysafe.http.max-response-bytes=4096",
                    "retrysafe.http.replayed-headers=Location,Content-Type",
                    "retrysafe.policy.retention=24h",
                    "retrysafe.http.routes[0].method=post", "retrysafe.http.routes[0].pattern=/payments",
                    "retrysafe.http.routes[0].json-members=/amount,/account/iban",
                    "retrysafe.http.routes[1].method=PATCH", "retrysafe.http.routes[1].pattern=/orders/{id}",
                    "retrysafe.http.routes[1].key-required=false", "retrysafe.http.routes[1].retention=2h")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        HttpIdempotency http = context.getBean(HttpIdempotency.class);
                        assertThat(http.maxRequestBytes()).isEqualTo(2048);
                        assertThat(http.maxResponseBytes()).isEqualTo(4096);
                        assertThat(http.replayedHeaders()).containsExactlyInAnyOrder("location", "content-type");
                        assertThat(http.routes()).hasSize(2);

                        IdempotentRoute payments = http.routes().get(0);
                        assertThat(payments.method()).isEqualTo("POST");
                        assertThat(payments.pattern()).isEqualTo("/payments");
                        assertThat(payments.keyRequired()).as("key-required defaults to true").isTrue();
                        assertThat(payments.jsonMembers()).containsExactly("/amount", "/account/iban");
                        assertThat(payments.policy()).as("no retention of its own").isEmpty();

                        IdempotentRoute orders = http.routes().get(1);
                        assertThat(orders.method()).isEqualTo("PATCH");
                        assertThat(orders.pattern()).isEqualTo("/orders/{id}");
                        assertThat(orders.keyRequired()).isFalse();
                        assertThat(orders.jsonMembers()).isEmpty();
                        assertThat(orders.policy()).hasValueSatisfying(policy -> {
                            assertThat(policy.retention()).isEqualTo(Duration.ofHours(2));
                            assertThat(policy.leaseTtl())
                                    .isEqualTo(context.getBean(RetrySafe.class).policy().leaseTtl());
                        });
                    });
        }

        @Test
        void withoutRoutesPostAndPatchAreProtectedWhenTheyCarryAKey() {
            webRunner.withPropertyValues("retrysafe.http.scope=global").run(context -> {
                HttpIdempotency http = context.getBean(HttpIdempotency.class);
                assertThat(http.routes()).extracting(IdempotentRoute::toString)
                        .containsExactly("POST /**", "PATCH /**");
                assertThat(http.routes()).noneMatch(IdempotentRoute::keyRequired);
                assertThat(http.maxRequestBytes()).isEqualTo(HttpIdempotency.DEFAULT_MAX_REQUEST_BYTES);
                assertThat(http.replayedHeaders()).isEqualTo(HttpIdempotency.DEFAULT_REPLAYED_HEADERS);
            });
        }

        @Test
        void credentialsCannotBeReplayedHeaders() {
            webRunner.withPropertyValues("retrysafe.http.scope=global",
                    "retrysafe.http.replayed-headers=Location,Set-Cookie").run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure()).rootCause()
                                .hasMessageContaining("must not include credentials or cookies, but included Set-Cookie");
                    });
        }

        @Test
        void keyLengthsOutOfRangeFailTheStart() {
            runner.withPropertyValues("retrysafe.key.max-length=300").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("300");
            });
        }
    }

    @Nested
    class Scope {

        @Test
        void principalScopeWithoutSpringSecurityFailsNamingTheAlternatives() {
            assertThat(isPresent("org.springframework.security.core.context.SecurityContextHolder"))
                    .as("Spring Security must not be on the test class path").isFalse();
            webRunner.run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause()
                        .hasMessageContaining("retrysafe.http.scope=principal (the default)")
                        .hasMessageContaining("no Spring Security")
                        .hasMessageContaining("define a ScopeResolver bean")
                        .hasMessageContaining("retrysafe.http.scope=header with retrysafe.http.scope-header")
                        .hasMessageContaining("retrysafe.http.scope=hashed-header")
                        .hasMessageContaining("retrysafe.http.scope=global")
                        .hasMessageContaining("docs/http.md#without-spring-security");
            });
        }

        @Test
        void headerScopeWithoutItsHeaderFails() {
            webRunner.withPropertyValues("retrysafe.http.scope=header").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause().hasMessage(
                        "retrysafe.http.scope=header needs retrysafe.http.scope-header, but it was not set");
            });
        }

        @Test
        void hashedHeaderScopeWithABlankHeaderFails() {
            webRunner.withPropertyValues("retrysafe.http.scope=hashed-header", "retrysafe.http.scope-header= ")
                    .run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure()).rootCause()
                                .hasMessageContaining("needs retrysafe.http.scope-header");
                    });
        }

        @Test
        void unknownScopeFailsListingTheChoices() {
            webRunner.withPropertyValues("retrysafe.http.scope=tenant").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause().hasMessage(
                        "retrysafe.http.scope must be principal, header, hashed-header or global, but was tenant");
            });
        }

        @Test
        void headerScopeNamesTheCallerFromTheHeader() {
            webRunner.withPropertyValues("retrysafe.http.scope=HEADER", "retrysafe.http.scope-header=X-Tenant")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        ScopeResolver scope = context.getBean(HttpIdempotency.class).scope();
                        MockHttpServletRequest request = new MockHttpServletRequest();
                        assertThat(scope.resolve(request)).as("no header, no caller").isNull();
                        request.addHeader("X-Tenant", "acme");
                        assertThat(scope.resolve(request)).contains("acme");
                    });
        }

        private static boolean isPresent(String className) {
            try {
                Class.forName(className, false, RetrySafeAutoConfigurationTest.class.getClassLoader());
                return true;
            } catch (ClassNotFoundException e) {
                return false;
            }
        }
    }

    @Nested
    class Web {

        @Test
        void filterIsRegisteredInAServletWebApplicationAfterSpringSecurity() {
            webRunner.withPropertyValues("retrysafe.http.scope=global").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasBean("retrySafeFilterRegistration");
                FilterRegistrationBean<?> registration =
                        context.getBean("retrySafeFilterRegistration", FilterRegistrationBean.class);
                assertThat(registration.getFilter()).isInstanceOf(RetrySafeFilter.class);
                assertThat(registration.getFilterName()).isEqualTo("retrySafeFilter");
                assertThat(registration.getOrder()).isEqualTo(RetrySafeWebAutoConfiguration.FILTER_ORDER)
                        .isGreaterThan(-100) // Spring Security's filter chain
                        .isLessThan(Ordered.LOWEST_PRECEDENCE);
                assertThat(context).hasSingleBean(RetrySafeExceptionHandler.class);
            });
        }

        @Test
        void noFilterOutsideAWebApplication() {
            runner.withPropertyValues("retrysafe.http.scope=global").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(RetrySafe.class);
                assertThat(context).doesNotHaveBean(FilterRegistrationBean.class);
                assertThat(context).doesNotHaveBean(HttpIdempotency.class);
                assertThat(context).doesNotHaveBean(IdempotentExecutor.class);
            });
        }

        @Test
        void transactionalModeRunsRequestsInTheApplicationsTransactions() {
            withPostgres(webRunner).withPropertyValues("retrysafe.http.scope=global").run(context -> {
                assertThat(context).hasNotFailed();
                // Transactional, but for routes an asynchronous Spring MVC handler serves (none here).
                assertThat(context).getBean(IdempotentExecutor.class).isInstanceOfSatisfying(RouteModeExecutor.class,
                        executor -> assertThat(executor.transactional()).isInstanceOf(SpringTransactionalExecutor.class));
            });
        }

        @Test
        void standaloneModeRunsRequestsOnTheEngine() {
            withPostgres(webRunner).withPropertyValues("retrysafe.http.scope=global", "retrysafe.mode=standalone")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).getBean(IdempotentExecutor.class)
                                .isNotInstanceOf(SpringTransactionalExecutor.class);
                    });
        }

        @Test
        void inMemoryStoreRunsRequestsOnTheEngine() {
            webRunner.withPropertyValues("retrysafe.http.scope=global").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).getBean(IdempotentExecutor.class)
                        .isNotInstanceOf(SpringTransactionalExecutor.class);
            });
        }

        @Test
        void transactionalModeWithoutTransactionManagerFailsWithTheWayOut() {
            new WebApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(BootLine.DATA_SOURCE))
                    .withConfiguration(RETRYSAFE)
                    .withPropertyValues("spring.datasource.url=" + TestDatabases.postgresJdbcUrl(),
                            "spring.datasource.username=" + TestDatabases.postgresUser(),
                            "spring.datasource.password=" + TestDatabases.postgresPassword(),
                            "retrysafe.http.scope=global")
                    .run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure()).rootCause()
                                .hasMessageContaining("needs one PlatformTransactionManager")
                                .hasMessageContaining("retrysafe.mode=standalone");
                    });
        }
    }

    @Nested
    class Purge {

        @Test
        void scheduledWithTheJdbcStore() {
            withPostgres(runner).withPropertyValues("retrysafe.purge.cron=0 30 2 * * *",
                    "retrysafe.purge.zone=Europe/Berlin", "retrysafe.purge.batch-size=50").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).hasSingleBean(RetrySafePurgeScheduler.class);
                        assertThat(context.getBean(RetrySafePurgeScheduler.class).isRunning()).isTrue();
                    });
        }

        @Test
        void theBatchesRunBackToBackUnlessAMaxDutyCycleIsSet() {
            withPostgres(runner).run(context -> assertThat(context.getBean(RetrySafePurgeScheduler.class).purger()
                    .maxDutyCycle()).isEqualTo(1.0));
            withPostgres(runner).withPropertyValues("retrysafe.purge.max-duty-cycle=0.25").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context.getBean(RetrySafePurgeScheduler.class).purger().maxDutyCycle()).isEqualTo(0.25);
            });
        }

        @Test
        void aMaxDutyCycleOutsideZeroToOneFailsTheStart() {
            withPostgres(runner).withPropertyValues("retrysafe.purge.max-duty-cycle=0").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause()
                        .hasMessage("maxDutyCycle must be more than 0 and at most 1, but was 0.0");
            });
        }

        @Test
        void notScheduledWhenDisabled() {
            withPostgres(runner).withPropertyValues("retrysafe.purge.enabled=false").run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasSingleBean(JdbcIdempotencyStore.class);
                assertThat(context).doesNotHaveBean(RetrySafePurgeScheduler.class);
            });
        }

        @Test
        void notScheduledWithTheInMemoryStore() {
            runner.run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).doesNotHaveBean(RetrySafePurgeScheduler.class);
            });
        }

        @Test
        void anInvalidCronFailsTheStart() {
            withPostgres(runner).withPropertyValues("retrysafe.purge.cron=every night").run(context -> {
                assertThat(context).hasFailed();
                assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("every night");
            });
        }

        @Test
        void purgeDeletesExpiredRecordsInBatchesAndCountsThem() throws Exception {
            String table = "rs_autoconfig_purge_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
            try {
                withPostgres(runner).withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                        .withPropertyValues("retrysafe.store.table=" + table, "retrysafe.store.initialize-schema=true",
                                "retrysafe.purge.batch-size=2")
                        .run(context -> {
                            assertThat(context).hasNotFailed();
                            DataSource dataSource = context.getBean(DataSource.class);
                            insertRecords(dataSource, table, "expired", 5, "- interval '1 hour'");
                            insertRecords(dataSource, table, "alive", 1, "+ interval '1 hour'");

                            PurgeResult result = context.getBean(RetrySafePurgeScheduler.class).purgeNow();

                            assertThat(result.ran()).isTrue();
                            assertThat(result.deleted()).isEqualTo(5);
                            assertThat(result.batches()).as("batches of 2: 2, 2, 1").isEqualTo(3);
                            assertThat(count(dataSource, table)).isEqualTo(1);
                            MeterRegistry meters = context.getBean(MeterRegistry.class);
                            assertThat(meters.get(MicrometerRetrySafeListener.PURGE_DELETED).counter().count())
                                    .isEqualTo(5.0);
                            assertThat(meters.get(MicrometerRetrySafeListener.PURGE_RUNS).tag("finished", "true")
                                    .counter().count()).isEqualTo(1.0);
                            assertThat(meters.get(MicrometerRetrySafeListener.PURGE_RUNS).tag("finished", "false")
                                    .counter().count()).isZero();
                        });
            } finally {
                try (Connection c = TestDatabases.postgres().getConnection(); Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS " + table);
                }
            }
        }

        @Test
        void stoppingInterruptsARunInItsPauseWhichReleasesTheLock() throws Exception {
            String table = "rs_autoconfig_paced_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
            DataSource dataSource = TestDatabases.postgres();
            JdbcIdempotencyStore store = JdbcIdempotencyStore.builder(dataSource).table(table).build();
            store.createSchema();
            try {
                insertRecords(dataSource, table, "expired", 5, "- interval '1 hour'");
                // So small a share that the pause after the first batch outlasts the test: only the stop ends it.
                RetrySafePurgeScheduler scheduler = new RetrySafePurgeScheduler(
                        store.purger().batchSize(2).maxDutyCycle(1e-9).build(), "* * * * * *", ZoneOffset.UTC,
                        run -> { }, report -> { });
                scheduler.start();
                try {
                    await().atMost(Duration.ofSeconds(30)).until(() -> count(dataSource, table) == 3);
                } finally {
                    scheduler.stop();
                }

                PurgeResult next = store.purger().build().purge();
                assertThat(next.ran()).as("the stop returned after the run let go of its lock").isTrue();
                assertThat(next.deleted()).as("the stopped run deleted its first batch only").isEqualTo(3);
            } finally {
                try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                    s.execute("DROP TABLE IF EXISTS " + table);
                }
            }
        }

        private static void insertRecords(DataSource dataSource, String table, String prefix, int n, String expiry)
                throws Exception {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                for (int i = 0; i < n; i++) {
                    s.execute("INSERT INTO " + table + " (scope, idem_key, fingerprint, status, owner_token, attempt,"
                            + " created_at, lease_expires_at, expires_at) VALUES ('test', '" + prefix + i
                            + "', '\\x00', 'COMPLETED', gen_random_uuid(), 1, now() - interval '2 hours',"
                            + " now() - interval '2 hours', now() " + expiry + ")");
                }
            }
        }

        private static int count(DataSource dataSource, String table) throws Exception {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
                rs.next();
                return rs.getInt(1);
            }
        }

        @Test
        void stopsWithTheContext() {
            List<RetrySafePurgeScheduler> schedulers = new ArrayList<>();
            withPostgres(runner).run(context -> schedulers.add(context.getBean(RetrySafePurgeScheduler.class)));
            assertThat(schedulers).singleElement().satisfies(s -> assertThat(s.isRunning()).isFalse());
        }
    }

    @Nested
    class Metrics {

        @Test
        void engineReportsToTheApplicationsMeterRegistry() {
            runner.withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                    .withPropertyValues("retrysafe.name=orders").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).hasSingleBean(MicrometerRetrySafeListener.class);
                        MeterRegistry registry = context.getBean(MeterRegistry.class);
                        RetrySafe retrySafe = context.getBean(RetrySafe.class);

                        String key = UUID.randomUUID().toString();
                        executeOnce(retrySafe, key, "first");
                        executeOnce(retrySafe, key, "again");

                        assertThat(requests(registry, "orders", "executed")).isEqualTo(1.0);
                        assertThat(requests(registry, "orders", "replayed")).isEqualTo(1.0);
                        assertThat(registry.get(MicrometerRetrySafeListener.COMPLETIONS).tag("name", "orders")
                                .tag("completion", "stored").counter().count()).isEqualTo(1.0);
                    });
        }

        @Test
        void metricsListenerSitsBesideTheApplicationsOwnListener() {
            AtomicInteger outcomes = new AtomicInteger();
            RetrySafeListener own = new RetrySafeListener() {
                @Override
                public void onOutcome(IdempotencyKey key, Outcome<?> outcome) {
                    outcomes.incrementAndGet();
                }
            };
            runner.withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
                    .withBean("ownListener", RetrySafeListener.class, () -> own).run(context -> {
                        assertThat(context).hasNotFailed();
                        executeOnce(context.getBean(RetrySafe.class), UUID.randomUUID().toString(), "x");
                        assertThat(outcomes).hasValue(1);
                        assertThat(requests(context.getBean(MeterRegistry.class), RetrySafe.DEFAULT_NAME, "executed"))
                                .isEqualTo(1.0);
                    });
        }

        @Test
        void noMetricsListenerWithoutAMeterRegistry() {
            runner.run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).doesNotHaveBean(MicrometerRetrySafeListener.class);
            });
        }

        private static double requests(MeterRegistry registry, String name, String outcome) {
            return registry.get(MicrometerRetrySafeListener.REQUESTS).tag("name", name).tag("outcome", outcome)
                    .counter().count();
        }
    }

    @Nested
    class Annotation {

        @Test
        void advisorIsRegisteredAsInfrastructure() {
            runner.run(context -> {
                assertThat(context).hasNotFailed();
                assertThat(context).hasBean("retrySafeIdempotentAdvisor");
                assertThat(context.getBean("retrySafeIdempotentAdvisor")).isInstanceOf(DefaultPointcutAdvisor.class);
                assertThat(context.getBeanFactory().getBeanDefinition("retrySafeIdempotentAdvisor").getRole())
                        .isEqualTo(BeanDefinition.ROLE_INFRASTRUCTURE);
            });
        }
    }
}
