package io.retrysafe.dynamodb;

import io.retrysafe.testservices.TestDynamo;
import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * A client of the test server ({@code RETRYSAFE_DYNAMODB_URL}, or a private dynalite) and a table of
 * this test class's own, created through the store before its first test; {@link #close()} deletes the table and closes the
 * client. Registered as a test class's static extension, it closes after the class's last test.
 */
final class DynamoTable implements AutoCloseable, BeforeAllCallback, AfterAllCallback {
    /** Short enough that the contract's leases of 1 s can be taken over; the default is 1 s. */
    static final Duration TEST_SKEW = Duration.ofMillis(200);

    final String tableName = TestDynamo.uniqueTableName("retrysafe-test");
    // Set before the class's first test: a missing server then skips (or, under CI=true, fails) the class.
    DynamoDbClient client;
    DynamoDbIdempotencyStore store;

    @Override
    public void beforeAll(ExtensionContext context) {
        client = client(TestDynamo.url());
        store = store(b -> b.maxClockSkew(TEST_SKEW));
        store.createTableIfAbsent();
    }

    /** Another store on this table, as another instance would have it. */
    DynamoDbIdempotencyStore store(UnaryOperator<DynamoDbIdempotencyStore.Builder> settings) {
        return settings.apply(DynamoDbIdempotencyStore.builder(client).tableName(tableName)).build();
    }

    /** A store on this table whose clock is {@code offset} ahead of this machine's (behind if negative). */
    DynamoDbIdempotencyStore storeWithClock(Duration offset, Duration maxClockSkew) {
        return store(b -> b.clock(Clock.offset(Clock.systemUTC(), offset)).maxClockSkew(maxClockSkew));
    }

    static DynamoDbClient client(String url) {
        return DynamoDbClient.builder().endpointOverride(URI.create(url)).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
                .httpClient(UrlConnectionHttpClient.create()).build();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    @Override
    public void close() {
        if (client == null) {
            return;
        }
        try {
            client.deleteTable(r -> r.tableName(tableName));
        } finally {
            client.close();
        }
    }
}
