package io.retrysafe.gateway;

import io.retrysafe.testservices.TestDynamo;
import java.net.URI;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * The gateway on DynamoDB (the test server: {@code RETRYSAFE_DYNAMODB_URL}, or a private dynalite), in a table
 * it creates, with HTTP Basic callers.
 */
class GatewayDynamoDbIT extends BasicScopeContract {
    private final String table = TestDynamo.uniqueTableName("gw-it");
    /** The server's URL once {@link #store()} found one: the table to drop is there. */
    private String url;

    static {
        // The gateway's client takes its region and credentials from the SDK's default chains, as a deployed
        // gateway takes them from its environment; the test server checks neither.
        System.setProperty("aws.region", System.getProperty("aws.region", "us-east-1"));
        System.setProperty("aws.accessKeyId", System.getProperty("aws.accessKeyId", "test"));
        System.setProperty("aws.secretAccessKey", System.getProperty("aws.secretAccessKey", "test"));
    }

    @Override
    String store() {
        return """
                type: dynamodb
                url: %s
                table: %s
                create-schema: true
                """.formatted(url = TestDynamo.url(), table);
    }

    @Override
    void cleanUp() {
        if (url == null) {
            return;
        }
        try (DynamoDbClient client = DynamoDbClient.builder().endpointOverride(URI.create(url))
                .region(Region.US_EAST_1).httpClient(UrlConnectionHttpClient.create())
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
                .build()) {
            client.deleteTable(r -> r.tableName(table));
        }
    }
}
