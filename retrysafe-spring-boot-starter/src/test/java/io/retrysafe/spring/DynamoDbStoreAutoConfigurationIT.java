package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.Outcome;
import io.retrysafe.ResponseCodec;
import io.retrysafe.RetrySafe;
import io.retrysafe.dynamodb.DynamoDbIdempotencyStore;
import io.retrysafe.testservices.TestDynamo;
import java.net.URI;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/** {@code retrysafe.store.type=dynamodb}: the store on the application's client, or on one the starter makes. */
class DynamoDbStoreAutoConfigurationIT {

    private static DynamoDbClient client;
    private static final String TABLE = TestDynamo.uniqueTableName("retrysafe-starter");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON))
            .withConfiguration(AutoConfigurations.of(RetrySafeAutoConfiguration.class));

    @BeforeAll
    static void connect() {
        client = newClient();
    }

    /** A client of the test server; as a bean, the context closes it. */
    private static DynamoDbClient newClient() {
        return DynamoDbClient.builder().endpointOverride(URI.create(TestDynamo.url())).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
                .httpClient(UrlConnectionHttpClient.create()).build();
    }

    @AfterAll
    static void dropTable() {
        if (client != null) {
            try {
                client.deleteTable(r -> r.tableName(TABLE));
            } finally {
                client.close();
            }
        }
    }

    @Test
    void onTheApplicationsClientTheTableIsCreatedAndAnOperationRunsOnce() {
        runner.withBean(DynamoDbClient.class, DynamoDbStoreAutoConfigurationIT::newClient).withPropertyValues("retrysafe.store.type=dynamodb",
                "retrysafe.store.dynamodb.table-name=" + TABLE, "retrysafe.store.dynamodb.create-table=true",
                "retrysafe.store.dynamodb.max-clock-skew=250ms", "retrysafe.store.dynamodb.max-response-size=1MB")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    DynamoDbIdempotencyStore store = context.getBean(DynamoDbIdempotencyStore.class);
                    assertThat(store.tableName()).isEqualTo(TABLE);
                    assertThat(store.maxClockSkew()).isEqualTo(Duration.ofMillis(250));
                    assertThat(store.maxResponseSize()).isEqualTo(1024 * 1024);
                    RetrySafe retrySafe = context.getBean(RetrySafe.class);
                    assertThat(retrySafe.store()).isSameAs(store);
                    assertThat(context).doesNotHaveBean(InMemoryIdempotencyStore.class);

                    IdempotencyKey key = IdempotencyKey.of("starter-" + UUID.randomUUID(), "order-1");
                    Fingerprint fingerprint = Fingerprint.sha256("POST /orders".getBytes(UTF_8));
                    AtomicInteger runs = new AtomicInteger();
                    Outcome<String> first = retrySafe.execute(key, fingerprint, ResponseCodec.utf8(),
                            attempt -> "order " + runs.incrementAndGet());
                    Outcome<String> retry = retrySafe.execute(key, fingerprint, ResponseCodec.utf8(),
                            attempt -> "order " + runs.incrementAndGet());

                    assertThat(first).isInstanceOf(Outcome.Executed.class);
                    assertThat(retry).isEqualTo(new Outcome.Replayed<>("order 1"));
                    assertThat(runs).hasValue(1);
                });
    }

    @Test
    void withoutAClientBeanTheStarterMakesOneFromTheProperties() {
        runner.withPropertyValues("retrysafe.store.type=dynamodb", "retrysafe.store.dynamodb.region=eu-west-1",
                "retrysafe.store.dynamodb.endpoint=http://127.0.0.1:1").run(context -> {
                    assertThat(context).hasNotFailed();
                    DynamoDbClient made = context.getBean(DynamoDbClient.class);
                    assertThat(made.serviceClientConfiguration().region()).isEqualTo(Region.EU_WEST_1);
                    assertThat(made.serviceClientConfiguration().endpointOverride()).contains(URI.create("http://127.0.0.1:1"));
                    DynamoDbIdempotencyStore store = context.getBean(DynamoDbIdempotencyStore.class);
                    assertThat(store.tableName()).isEqualTo(DynamoDbIdempotencyStore.DEFAULT_TABLE_NAME);
                    assertThat(store.maxClockSkew()).isEqualTo(DynamoDbIdempotencyStore.DEFAULT_MAX_CLOCK_SKEW);
                    assertThat(store.maxResponseSize()).isEqualTo(DynamoDbIdempotencyStore.DEFAULT_MAX_RESPONSE_SIZE);
                });
    }

    @Test
    void transactionalModeIsRefused() {
        runner.withBean(DynamoDbClient.class, DynamoDbStoreAutoConfigurationIT::newClient).withPropertyValues("retrysafe.store.type=dynamodb",
                "retrysafe.mode=transactional").run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause()
                            .hasMessageContaining("retrysafe.mode=transactional needs the JDBC store");
                });
    }
}
