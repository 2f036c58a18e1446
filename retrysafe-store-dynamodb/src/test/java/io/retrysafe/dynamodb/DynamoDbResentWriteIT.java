package io.retrysafe.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.ClaimResult.Claimed;
import io.retrysafe.spi.ClaimResult.Replay;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import io.retrysafe.testservices.TestDynamo;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.interceptor.SdkExecutionAttribute;
import software.amazon.awssdk.http.urlconnection.UrlConnectionHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * A write that committed but whose answer was lost: the SDK sends it again, and the second one fails its
 * condition because the first one already changed the item. The store must answer as the first one did.
 * The client is real and talks to the test server; an interceptor loses one successful answer.
 */
class DynamoDbResentWriteIT {
    @RegisterExtension
    static final DynamoTable table = new DynamoTable();

    private static final LoseOneAnswer LOSE = new LoseOneAnswer();
    private static DynamoDbClient lossy;
    private static DynamoDbIdempotencyStore store;

    private final Fingerprint fingerprint = Fingerprint.sha256("POST /transfers".getBytes(UTF_8));
    private static final Duration RETENTION = Duration.ofMinutes(5);

    @BeforeAll
    static void connect() {
        lossy = DynamoDbClient.builder().endpointOverride(URI.create(TestDynamo.url())).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
                .httpClient(UrlConnectionHttpClient.create())
                .overrideConfiguration(c -> c.addExecutionInterceptor(LOSE)).build();
        store = DynamoDbIdempotencyStore.builder(lossy).tableName(table.tableName).build();
    }

    @AfterAll
    static void close() {
        if (lossy != null) {
            lossy.close();
        }
    }

    @Test
    void aClaimWhoseAnswerWasLostIsClaimed() {
        IdempotencyKey key = newKey();
        ClaimRequest request = new ClaimRequest(key, fingerprint, OwnerToken.random(), Duration.ofSeconds(30), RETENTION);

        ClaimResult result = LOSE.once("PutItem", () -> store.tryClaim(request));

        assertThat(result).as("the claim, sent twice").isEqualTo(new Claimed(request.token(), 1));
        assertThat(table.store.inspect(key).orElseThrow().status()).isEqualTo(RecordStatus.IN_PROGRESS);
    }

    @Test
    void aCompletionWhoseAnswerWasLostIsCommitted() {
        IdempotencyKey key = newKey();
        Claimed holder = claim(key);
        StoredResponse response = StoredResponse.of(201, Map.of("Location", List.of("/transfers/7")),
                "done".getBytes(UTF_8));

        FencedWrite result = LOSE.once("UpdateItem", () -> store.complete(key, holder.token(), response, RETENTION));

        assertThat(result).as("the completion, sent twice").isEqualTo(FencedWrite.COMMITTED);
        assertThat(table.store.tryClaim(new ClaimRequest(key, fingerprint, OwnerToken.random(), Duration.ofSeconds(30),
                RETENTION))).isEqualTo(new Replay(response));
    }

    @Test
    void aReleaseWhoseAnswerWasLostIsCommittedButASecondReleaseIsNot() {
        IdempotencyKey key = newKey();
        Claimed holder = claim(key);

        FencedWrite result = LOSE.once("UpdateItem", () -> store.release(key, holder.token()));

        assertThat(result).as("the release, sent twice").isEqualTo(FencedWrite.COMMITTED);
        assertThat(store.release(key, holder.token())).as("a second release, a call of its own")
                .isEqualTo(FencedWrite.LEASE_LOST);
    }

    private IdempotencyKey newKey() {
        return IdempotencyKey.of("resent-" + UUID.randomUUID(), "key");
    }

    private Claimed claim(IdempotencyKey key) {
        ClaimResult result = table.store.tryClaim(new ClaimRequest(key, fingerprint, OwnerToken.random(),
                Duration.ofSeconds(30), RETENTION));
        assertThat(result).isInstanceOf(Claimed.class);
        return (Claimed) result;
    }

    /**
     * Turns the next successful answer to one operation into a lost connection, after the server applied the
     * request; the SDK's retry policy then sends the request again.
     */
    static final class LoseOneAnswer implements ExecutionInterceptor {
        private final AtomicReference<String> operation = new AtomicReference<>();
        private final AtomicBoolean lost = new AtomicBoolean();

        <T> T once(String operationName, Supplier<T> call) {
            lost.set(false);
            operation.set(operationName);
            try {
                T result = call.get();
                assertThat(lost.get()).as("an answer to %s was lost (else the test proves nothing)", operationName)
                        .isTrue();
                return result;
            } finally {
                operation.set(null);
            }
        }

        @Override
        public void afterTransmission(Context.AfterTransmission context, ExecutionAttributes attributes) {
            String name = attributes.getAttribute(SdkExecutionAttribute.OPERATION_NAME);
            if (context.httpResponse().isSuccessful() && name.equals(operation.get())
                    && operation.compareAndSet(name, null)) {
                lost.set(true);
                throw SdkClientException.create("answer lost", new IOException("connection reset after the write"));
            }
        }
    }
}
