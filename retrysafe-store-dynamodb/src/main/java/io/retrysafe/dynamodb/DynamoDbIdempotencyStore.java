package io.retrysafe.dynamodb;

import static io.retrysafe.dynamodb.DynamoItems.ATTEMPT;
import static io.retrysafe.dynamodb.DynamoItems.BODY_LENGTH;
import static io.retrysafe.dynamodb.DynamoItems.BODY_PARTS;
import static io.retrysafe.dynamodb.DynamoItems.BODY_REF;
import static io.retrysafe.dynamodb.DynamoItems.COMPLETED;
import static io.retrysafe.dynamodb.DynamoItems.CREATED;
import static io.retrysafe.dynamodb.DynamoItems.EXPIRES;
import static io.retrysafe.dynamodb.DynamoItems.FINGERPRINT;
import static io.retrysafe.dynamodb.DynamoItems.ID;
import static io.retrysafe.dynamodb.DynamoItems.ITEM_LIMIT;
import static io.retrysafe.dynamodb.DynamoItems.LEASE;
import static io.retrysafe.dynamodb.DynamoItems.PART;
import static io.retrysafe.dynamodb.DynamoItems.PART_SIZE;
import static io.retrysafe.dynamodb.DynamoItems.RECORD_OVERHEAD;
import static io.retrysafe.dynamodb.DynamoItems.RESPONSE_BODY;
import static io.retrysafe.dynamodb.DynamoItems.RESPONSE_HEADERS;
import static io.retrysafe.dynamodb.DynamoItems.RESPONSE_STATUS;
import static io.retrysafe.dynamodb.DynamoItems.STATUS;
import static io.retrysafe.dynamodb.DynamoItems.TOKEN;
import static io.retrysafe.dynamodb.DynamoItems.TTL;
import static io.retrysafe.dynamodb.DynamoItems.WRITE;
import static io.retrysafe.dynamodb.DynamoItems.b;
import static io.retrysafe.dynamodb.DynamoItems.n;
import static io.retrysafe.dynamodb.DynamoItems.names;
import static io.retrysafe.dynamodb.DynamoItems.number;
import static io.retrysafe.dynamodb.DynamoItems.s;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoreUnavailableException;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.Require;
import io.retrysafe.spi.ClaimDecision;
import io.retrysafe.spi.ClaimRequest;
import io.retrysafe.spi.ClaimResult;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.FoundRecord;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.IdempotencyStore;
import io.retrysafe.spi.OwnerToken;
import io.retrysafe.spi.RecordStatus;
import java.lang.System.Logger.Level;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Consumer;
import java.util.function.Supplier;
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.retry.backoff.FixedDelayBackoffStrategy;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeDefinition;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.BillingMode;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbException;
import software.amazon.awssdk.services.dynamodb.model.KeySchemaElement;
import software.amazon.awssdk.services.dynamodb.model.KeyType;
import software.amazon.awssdk.services.dynamodb.model.ResourceInUseException;
import software.amazon.awssdk.services.dynamodb.model.ScalarAttributeType;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;
import software.amazon.awssdk.services.dynamodb.waiters.DynamoDbWaiter;

/**
 * Records in Amazon DynamoDB through the AWS SDK for Java 2.x. A standalone store: a claim, a
 * completion, a release and a lease renewal are each one conditional write, so a claim is visible to
 * every duplicate before the operation runs, and a write from an attempt that no longer holds the key
 * (its token replaced by a takeover) fails its condition and changes nothing.
 *
 * <pre>{@code
 * DynamoDbClient client = DynamoDbClient.create();
 * DynamoDbIdempotencyStore store = DynamoDbIdempotencyStore.builder(client).tableName("idempotency").build();
 * store.createTableIfAbsent(); // or create it yourself: docs/dynamodb.md
 * RetrySafe retrySafe = RetrySafe.builder(store).build();
 * }</pre>
 *
 * <p>DynamoDB has no clock in its conditions, so times are this store's {@link Clock}: instances whose
 * clocks differ by at most {@code maxClockSkew} stay correct, because an attempt takes a key over only
 * once the holder's lease has been over for {@code maxClockSkew} by its own clock, and a claim's lease
 * must be longer than that. Records expire through DynamoDB's TTL, which deletes late; until then a
 * read treats a record past its expiry as absent, and {@link #purgeExpired} has nothing to do.
 *
 * <p>Every failure of DynamoDB is a {@link StoreUnavailableException} naming this store: the engine
 * answers it with 503 and does not run the operation. The client stays the application's.
 */
public final class DynamoDbIdempotencyStore implements IdempotencyStore {
    public static final String DEFAULT_TABLE_NAME = "retrysafe_idempotency";
    public static final String DEFAULT_NAME = "dynamodb";
    /** How far apart the clocks of the instances sharing a table may be. */
    public static final Duration DEFAULT_MAX_CLOCK_SKEW = Duration.ofSeconds(1);
    /** The largest response (body and headers) a completion stores; larger ones are refused. */
    public static final int DEFAULT_MAX_RESPONSE_SIZE = 4 * 1024 * 1024;

    /** Rounds of read-then-conditional-write a claim makes before giving up on a key others keep changing. */
    static final int MAX_CLAIM_ROUNDS = 16;
    private static final Duration RETRY_AFTER = Duration.ofSeconds(1);
    private static final Duration TABLE_ACTIVE_TIMEOUT = Duration.ofSeconds(60);
    /**
     * The calls that create the table run once, at start-up, often on a cold client: they are not bound by
     * the client's call timeout, which is set for the request path.
     */
    private static final Consumer<AwsRequestOverrideConfiguration.Builder> SLOW_CALL =
            o -> o.apiCallTimeout(TABLE_ACTIVE_TIMEOUT);
    private static final System.Logger LOG = System.getLogger(DynamoDbIdempotencyStore.class.getName());

    private final DynamoDbClient client;
    private final String tableName;
    private final String name;
    private final Clock clock;
    private final Duration maxClockSkew;
    private final long skewMillis;
    private final int maxResponseSize;

    private DynamoDbIdempotencyStore(Builder b) {
        this.client = b.client;
        this.tableName = b.tableName == null ? DEFAULT_TABLE_NAME : b.tableName;
        this.name = b.name == null ? DEFAULT_NAME : b.name;
        this.clock = b.clock == null ? Clock.systemUTC() : b.clock;
        this.maxClockSkew = b.maxClockSkew == null ? DEFAULT_MAX_CLOCK_SKEW : b.maxClockSkew;
        this.skewMillis = maxClockSkew.toMillis();
        this.maxResponseSize = b.maxResponseSize == null ? DEFAULT_MAX_RESPONSE_SIZE : b.maxResponseSize;
    }

    public static Builder builder(DynamoDbClient client) {
        return new Builder(Require.notNull(client, "client"));
    }

    public String tableName() {
        return tableName;
    }

    public Duration maxClockSkew() {
        return maxClockSkew;
    }

    public int maxResponseSize() {
        return maxResponseSize;
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * Creates the table if there is none (partition key {@code id}, a string; on-demand capacity), waits
     * until it is active, and turns on DynamoDB's TTL on attribute {@code ttl}. A table that exists is
     * left as it is. TTL that cannot be turned on (no permission, an emulator without it) is logged, not
     * an error: reads treat expired records as absent either way, they only stay in the table.
     */
    public void createTableIfAbsent() {
        boolean created = call("create table", () -> {
            try {
                client.createTable(r -> r.overrideConfiguration(SLOW_CALL).tableName(tableName)
                        .billingMode(BillingMode.PAY_PER_REQUEST)
                        .attributeDefinitions(AttributeDefinition.builder().attributeName(ID)
                                .attributeType(ScalarAttributeType.S).build())
                        .keySchema(KeySchemaElement.builder().attributeName(ID).keyType(KeyType.HASH).build()));
                return true;
            } catch (ResourceInUseException e) {
                return false; // it exists (or is being created by another instance); the wait below covers both
            }
        });
        call("wait for table", () -> {
            try (DynamoDbWaiter waiter = DynamoDbWaiter.builder().client(client)
                    .overrideConfiguration(o -> o.maxAttempts(Math.toIntExact(TABLE_ACTIVE_TIMEOUT.toMillis() / 200))
                            .backoffStrategy(FixedDelayBackoffStrategy.create(Duration.ofMillis(200))))
                    .build()) {
                waiter.waitUntilTableExists(r -> r.overrideConfiguration(SLOW_CALL).tableName(tableName)).matched().exception().ifPresent(e -> {
                    throw e instanceof SdkException se ? se : new IllegalStateException(e);
                });
            }
            return null;
        });
        if (created) {
            try {
                client.updateTimeToLive(r -> r.overrideConfiguration(SLOW_CALL).tableName(tableName)
                        .timeToLiveSpecification(t -> t.attributeName(TTL).enabled(true)));
            } catch (SdkException e) {
                LOG.log(Level.WARNING, () -> "[" + name + "] could not turn on TTL (attribute " + TTL + ") on table "
                        + tableName + ": " + e.getMessage() + "; expired records are treated as absent but stay in "
                        + "the table until deleted");
            }
        }
    }

    // ------------------------------------------------------------------------------------------
    // The SPI
    // ------------------------------------------------------------------------------------------

    /**
     * A conditional put that succeeds when the key has no live record; otherwise the record is read
     * (strongly consistent), {@link ClaimDecision} decides, and a takeover is a conditional update on the
     * state that was read. A write that lost a race to another claim reads again: the next round answers
     * from what the winner wrote.
     */
    @Override
    public ClaimResult tryClaim(ClaimRequest request) {
        Require.notNull(request, "request");
        long leaseMillis = millis(request.leaseTtl(), "leaseTtl");
        long retentionMillis = millis(request.retention(), "retention");
        if (leaseMillis <= skewMillis) {
            throw new IllegalArgumentException("leaseTtl must be longer than maxClockSkew (" + maxClockSkew
                    + "): another instance's clock may be that far ahead and take over a live lease, but was "
                    + request.leaseTtl());
        }
        String id = request.key().hash();
        String token = request.token().toString();
        for (int round = 0; round < MAX_CLAIM_ROUNDS; round++) {
            long now = clock.millis();
            if (putIfAbsent(id, request, now, leaseMillis, retentionMillis)) {
                return new ClaimResult.Claimed(request.token(), 1);
            }
            Map<String, AttributeValue> item = read(id, "claim");
            if (item == null) {
                continue; // deleted since (TTL): the next put finds it absent
            }
            now = clock.millis();
            if (item.get(TOKEN).s().equals(token) && DynamoItems.status(item) == RecordStatus.IN_PROGRESS) {
                // The SDK sent this claim again after the first one was written, but its answer was lost.
                return new ClaimResult.Claimed(request.token(), Math.toIntExact(number(item, ATTEMPT)));
            }
            long untilTakeover = number(item, LEASE) + skewMillis - now;
            ClaimDecision decision = ClaimDecision.of(request.fingerprint(), new FoundRecord(
                    DynamoItems.fingerprint(item), DynamoItems.status(item), DynamoItems.isExpired(item, now),
                    Duration.ofMillis(untilTakeover), completedResponse(id, item)));
            if (decision instanceof ClaimDecision.Answer a) {
                return inProgressAsTheLeaseSees(a.result());
            }
            if (((ClaimDecision.TakeOver) decision).fresh()) {
                continue; // expired: the next round's put replaces it
            }
            int next = Math.toIntExact(number(item, ATTEMPT)) + 1;
            if (takeOver(id, item, token, next, now, leaseMillis, retentionMillis)) {
                return new ClaimResult.Claimed(request.token(), next);
            }
        }
        throw new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name + " failed to claim key "
                + request.key().digest() + " (table " + tableName + "): its record changed under " + MAX_CLAIM_ROUNDS
                + " claims in a row", null, false);
    }

    /**
     * {@link ClaimDecision} was given the time until a takeover is allowed (the lease plus
     * {@code maxClockSkew}); a caller is told the holder's lease while it runs, then the rest of the margin.
     */
    private ClaimResult inProgressAsTheLeaseSees(ClaimResult result) {
        if (result instanceof ClaimResult.InProgress p && p.leaseRemaining().toMillis() > skewMillis) {
            return new ClaimResult.InProgress(p.leaseRemaining().minusMillis(skewMillis));
        }
        return result;
    }

    private boolean putIfAbsent(String id, ClaimRequest request, long now, long leaseMillis, long retentionMillis) {
        Map<String, AttributeValue> item = new HashMap<>();
        item.put(ID, s(id));
        item.put(FINGERPRINT, s(request.fingerprint().hex()));
        item.put(STATUS, s(RecordStatus.IN_PROGRESS.name()));
        item.put(TOKEN, s(request.token().toString()));
        item.put(ATTEMPT, n(1));
        item.put(CREATED, n(now));
        item.put(LEASE, n(now + leaseMillis));
        item.put(EXPIRES, n(now + retentionMillis));
        item.put(TTL, n(ttl(now + retentionMillis)));
        return call("claim", () -> {
            try {
                client.putItem(r -> r.tableName(tableName).item(item)
                        .conditionExpression("attribute_not_exists(#id) OR #expires <= :now")
                        .expressionAttributeNames(names(ID, EXPIRES))
                        .expressionAttributeValues(Map.of(":now", n(now))));
                return true;
            } catch (ConditionalCheckFailedException e) {
                return false;
            }
        });
    }

    /**
     * Takes over a released record, or one whose lease ended {@code maxClockSkew} ago, if it is still
     * what was read: same token and attempt, so exactly one of several racing takeovers succeeds.
     */
    private boolean takeOver(String id, Map<String, AttributeValue> read, String token, int attempt, long now,
            long leaseMillis, long retentionMillis) {
        return conditionalUpdate("claim", r -> r.key(Map.of(ID, s(id)))
                .updateExpression("SET #token = :token, #status = :inProgress, #attempt = :attempt, #lease = :lease, "
                        + "#expires = :expires, #ttl = :ttl")
                .conditionExpression("#token = :read AND #attempt = :readAttempt AND #expires > :now AND "
                        + "(#status = :failed OR (#status = :inProgress AND #lease <= :leaseOver))")
                .expressionAttributeNames(names(TOKEN, STATUS, ATTEMPT, LEASE, EXPIRES, TTL))
                .expressionAttributeValues(Map.ofEntries(Map.entry(":token", s(token)),
                        Map.entry(":inProgress", s(RecordStatus.IN_PROGRESS.name())),
                        Map.entry(":failed", s(RecordStatus.FAILED.name())), Map.entry(":attempt", n(attempt)),
                        Map.entry(":lease", n(now + leaseMillis)), Map.entry(":expires", n(now + retentionMillis)),
                        Map.entry(":ttl", n(ttl(now + retentionMillis))), Map.entry(":read", read.get(TOKEN)),
                        Map.entry(":readAttempt", read.get(ATTEMPT)), Map.entry(":now", n(now)),
                        Map.entry(":leaseOver", n(now - skewMillis)))));
    }

    /**
     * Stores the response if {@code token} holds the key. A body that does not fit in the record's item
     * goes first into body items of its own; the record names them only once its conditional update
     * succeeds, so a reader never sees a completion whose body is not all there.
     */
    @Override
    public FencedWrite complete(IdempotencyKey key, OwnerToken token, StoredResponse response, Duration retention) {
        Require.notNull(key, "key");
        Require.notNull(token, "token");
        Require.notNull(response, "response");
        long retentionMillis = millis(retention, "retention");
        String id = key.hash();
        String headers = DynamoItems.headers(response);
        int headerBytes = DynamoItems.headerBytes(headers);
        byte[] body = response.body();
        if ((long) headerBytes + body.length > maxResponseSize) {
            throw refused(key, "the response is " + (headerBytes + (long) body.length) + " bytes (headers "
                    + headerBytes + ", body " + body.length + "), over maxResponseSize " + maxResponseSize);
        }
        if (RECORD_OVERHEAD + headerBytes > ITEM_LIMIT) {
            throw refused(key, "the response's headers are " + headerBytes + " bytes; with the record they do not "
                    + "fit in one DynamoDB item (" + ITEM_LIMIT + " bytes)");
        }
        long now = clock.millis();
        long expires = now + retentionMillis;
        String write = UUID.randomUUID().toString();
        Map<String, AttributeValue> values = new HashMap<>(fence(token, now, write));
        values.put(":completed", s(RecordStatus.COMPLETED.name()));
        values.put(":now", n(now));
        values.put(":expires", n(expires));
        values.put(":ttl", n(ttl(expires)));
        values.put(":rstatus", n(response.status()));
        values.put(":rheaders", s(headers));
        String set = "SET #status = :completed, #completedAt = :now, #expires = :expires, #ttl = :ttl, "
                + "#rstatus = :rstatus, #rheaders = :rheaders, #write = :write, ";
        Map<String, String> names = names(TOKEN, STATUS, EXPIRES, TTL, RESPONSE_STATUS, RESPONSE_HEADERS, WRITE);
        names.put("#completedAt", COMPLETED);
        int parts = 0;
        if (RECORD_OVERHEAD + headerBytes + body.length <= ITEM_LIMIT) {
            values.put(":rbody", b(body, 0, body.length));
            names.put("#rbody", RESPONSE_BODY);
            set += "#rbody = :rbody";
        } else {
            parts = (body.length + PART_SIZE - 1) / PART_SIZE;
            putParts(id, write, body, parts, ttl(expires));
            values.put(":ref", s(write));
            values.put(":parts", n(parts));
            values.put(":length", n(body.length));
            names.putAll(names(BODY_REF, BODY_PARTS, BODY_LENGTH));
            set += "#rbodyref = :ref, #rbodyparts = :parts, #rbodylength = :length";
        }
        String update = set;
        FencedWrite result = fencedWrite("complete", id, write, r -> r.updateExpression(update)
                .expressionAttributeNames(names).expressionAttributeValues(values));
        if (result instanceof FencedWrite.LeaseLost && parts > 0) {
            deleteParts(id, write, parts);
        }
        return result;
    }

    /** Marks the record {@code FAILED} (retryable) if {@code token} holds the key; its expiry stays. */
    @Override
    public FencedWrite release(IdempotencyKey key, OwnerToken token) {
        Require.notNull(key, "key");
        Require.notNull(token, "token");
        long now = clock.millis();
        String write = UUID.randomUUID().toString();
        Map<String, AttributeValue> values = new HashMap<>(fence(token, now, write));
        values.put(":failed", s(RecordStatus.FAILED.name()));
        return fencedWrite("release", key.hash(), write, r -> r.updateExpression("SET #status = :failed, #write = :write")
                .expressionAttributeNames(names(TOKEN, STATUS, EXPIRES, WRITE)).expressionAttributeValues(values));
    }

    @Override
    public boolean canRenewLease() {
        return true;
    }

    @Override
    public FencedWrite renewLease(IdempotencyKey key, OwnerToken token, Duration leaseTtl) {
        Require.notNull(key, "key");
        Require.notNull(token, "token");
        long leaseMillis = millis(leaseTtl, "leaseTtl");
        long now = clock.millis();
        String write = UUID.randomUUID().toString();
        Map<String, AttributeValue> values = new HashMap<>(fence(token, now, write));
        values.put(":lease", n(now + leaseMillis));
        return fencedWrite("renew lease", key.hash(), write, r -> r.updateExpression("SET #lease = :lease, #write = :write")
                .expressionAttributeNames(names(TOKEN, STATUS, EXPIRES, LEASE, WRITE)).expressionAttributeValues(values));
    }

    @Override
    public Optional<IdempotencyRecord> inspect(IdempotencyKey key) {
        Require.notNull(key, "key");
        String id = key.hash();
        Map<String, AttributeValue> item = read(id, "inspect");
        if (item == null || DynamoItems.isExpired(item, clock.millis())) {
            return Optional.empty(); // never written, or expired: absent whether TTL deleted it yet or not
        }
        return Optional.of(DynamoItems.record(key, item, Optional.ofNullable(completedResponse(id, item))));
    }

    /**
     * Does nothing and returns 0: every item carries its expiry in the TTL attribute and DynamoDB deletes
     * it, without consuming write capacity; until then reads treat it as absent. A scan here would cost
     * read capacity for the whole table.
     */
    @Override
    public int purgeExpired(int limit) {
        Require.between(limit, 1, Integer.MAX_VALUE, "limit");
        return 0;
    }

    // ------------------------------------------------------------------------------------------
    // DynamoDB
    // ------------------------------------------------------------------------------------------

    /**
     * The item's TTL: its expiry plus {@code maxClockSkew}, rounded up to the second, so that DynamoDB,
     * on AWS's clock, never deletes a record that an instance whose clock is behind still holds live.
     */
    private long ttl(long expiresMillis) {
        return DynamoItems.ttlSeconds(expiresMillis + skewMillis);
    }

    /** The values of the fence every write of a holder has: its token, a live {@code IN_PROGRESS} record. */
    private static Map<String, AttributeValue> fence(OwnerToken token, long now, String write) {
        return Map.of(":holder", s(token.toString()), ":inProgress", s(RecordStatus.IN_PROGRESS.name()),
                ":fenceNow", n(now), ":write", s(write));
    }

    /**
     * An update of the holder's record, fenced: it commits only if {@code token} holds the key and the
     * record has not expired. A failed condition is read back once: when the record carries this
     * write's own id, the SDK had sent the write twice (its first answer lost) and it did commit.
     */
    private FencedWrite fencedWrite(String operation, String id, String write,
            Consumer<UpdateItemRequest.Builder> update) {
        boolean committed = conditionalUpdate(operation, r -> {
            update.accept(r.key(Map.of(ID, s(id))));
            r.conditionExpression("#token = :holder AND #status = :inProgress AND #expires > :fenceNow");
        });
        if (committed) {
            return FencedWrite.COMMITTED;
        }
        Map<String, AttributeValue> item = read(id, operation);
        AttributeValue last = item == null ? null : item.get(WRITE);
        return last != null && write.equals(last.s()) ? FencedWrite.COMMITTED : FencedWrite.LEASE_LOST;
    }

    private boolean conditionalUpdate(String operation, Consumer<UpdateItemRequest.Builder> update) {
        return call(operation, () -> {
            try {
                client.updateItem(r -> update.accept(r.tableName(tableName)));
                return true;
            } catch (ConditionalCheckFailedException e) {
                return false;
            }
        });
    }

    /** The item, read strongly consistent (an eventually consistent read may miss a claim just made); null if none. */
    private Map<String, AttributeValue> read(String id, String operation) {
        return call(operation, () -> {
            Map<String, AttributeValue> item = client.getItem(r -> r.tableName(tableName).key(Map.of(ID, s(id)))
                    .consistentRead(true)).item();
            return item == null || item.isEmpty() ? null : item;
        });
    }

    /** The stored response of a completed record, its body read from its body items if it has them; else null. */
    private StoredResponse completedResponse(String id, Map<String, AttributeValue> item) {
        if (DynamoItems.status(item) != RecordStatus.COMPLETED) {
            return null;
        }
        if (!DynamoItems.hasBodyParts(item)) {
            return DynamoItems.response(item, null);
        }
        String ref = item.get(BODY_REF).s();
        int parts = Math.toIntExact(number(item, BODY_PARTS));
        byte[] body = new byte[Math.toIntExact(number(item, BODY_LENGTH))];
        int at = 0;
        for (int i = 0; i < parts; i++) {
            Map<String, AttributeValue> part = read(DynamoItems.partId(id, ref, i), "read a stored body");
            if (part == null) {
                throw new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name + ": body item " + i
                        + " of " + parts + " of a completed record in table " + tableName + " is missing; was it "
                        + "deleted by hand?", null, false);
            }
            byte[] bytes = part.get(PART).b().asByteArrayUnsafe();
            System.arraycopy(bytes, 0, body, at, bytes.length);
            at += bytes.length;
        }
        return DynamoItems.response(item, body);
    }

    /** Writes the body's items, each under this completion's own reference, so no other write can touch them. */
    private void putParts(String id, String ref, byte[] body, int parts, long ttl) {
        for (int i = 0; i < parts; i++) {
            int from = i * PART_SIZE;
            Map<String, AttributeValue> item = Map.of(ID, s(DynamoItems.partId(id, ref, i)), PART,
                    b(body, from, Math.min(body.length, from + PART_SIZE)), TTL, n(ttl));
            call("complete", () -> client.putItem(r -> r.tableName(tableName).item(item)));
        }
    }

    /** Deletes the body items of a completion that was refused; best effort, TTL deletes what is left. */
    private void deleteParts(String id, String ref, int parts) {
        try {
            for (int i = 0; i < parts; i++) {
                String partId = DynamoItems.partId(id, ref, i);
                client.deleteItem(r -> r.tableName(tableName).key(Map.of(ID, s(partId))));
            }
        } catch (SdkException e) {
            LOG.log(Level.DEBUG, () -> "[" + name + "] could not delete the body items of a refused completion; "
                    + "TTL will: " + e.getMessage());
        }
    }

    private <T> T call(String operation, Supplier<T> call) {
        try {
            return call.get();
        } catch (SdkException e) {
            throw failure(operation, e);
        }
    }

    /**
     * No answer, or a server error: unreachable. An answer that refuses (throttled, a missing table, no
     * permission): the store answered, so fail-open must not run the operation through it.
     */
    private StoreUnavailableException failure(String operation, SdkException e) {
        boolean unreachable = !(e instanceof DynamoDbException d) || d.statusCode() >= 500;
        return new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name + " failed to " + operation
                + " (DynamoDB table " + tableName + "): " + e.getMessage(), e, unreachable);
    }

    private StoreUnavailableException refused(IdempotencyKey key, String why) {
        return new StoreUnavailableException(name, RETRY_AFTER, "idempotency store " + name
                + " refused to complete key " + key.digest() + " (table " + tableName + "): " + why, null, false);
    }

    /** Times are whole milliseconds: a duration under 1 ms would end as it is written. */
    private static long millis(Duration d, String what) {
        Require.notNull(d, what);
        if (d.isNegative() || d.toMillis() < 1) {
            throw new IllegalArgumentException(what + " must be at least 1 ms, but was " + d);
        }
        return d.toMillis();
    }

    @Override
    public String toString() {
        return "DynamoDbIdempotencyStore[name=" + name + ", table=" + tableName + ", maxClockSkew=" + maxClockSkew
                + ", maxResponseSize=" + maxResponseSize + "]";
    }

    /** Builds a {@link DynamoDbIdempotencyStore}; each value may be set once. */
    public static final class Builder {
        private final DynamoDbClient client;
        private String tableName;
        private String name;
        private Clock clock;
        private Duration maxClockSkew;
        private Integer maxResponseSize;

        private Builder(DynamoDbClient client) {
            this.client = client;
        }

        /** The table ({@value #DEFAULT_TABLE_NAME} by default): 3 to 255 of {@code a-z A-Z 0-9 _ - .}, as DynamoDB allows. */
        public Builder tableName(String tableName) {
            Require.unset(this.tableName, "tableName");
            Require.notNull(tableName, "tableName");
            if (!tableName.matches("[a-zA-Z0-9_.-]{3,255}")) {
                throw new IllegalArgumentException("tableName must be 3 to 255 letters, digits, '_', '-' or '.', "
                        + "but was \"" + tableName + "\"");
            }
            this.tableName = tableName;
            return this;
        }

        /** The store's name in logs, metrics and errors ({@value #DEFAULT_NAME} by default). */
        public Builder name(String name) {
            Require.unset(this.name, "name");
            this.name = Require.notBlank(name, "name");
            return this;
        }

        /**
         * The clock leases and expiry are judged by ({@code Clock.systemUTC()} by default). DynamoDB has no
         * clock of its own in conditions, so every instance sharing the table must keep its clock within
         * {@link #maxClockSkew} of the others' (NTP, or AWS's time sync).
         */
        public Builder clock(Clock clock) {
            Require.unset(this.clock, "clock");
            this.clock = Require.notNull(clock, "clock");
            return this;
        }

        /**
         * How far apart the clocks of the instances sharing the table may be (1 s by default): a lease is
         * taken over only once it has been over this long, and a claim's lease must be longer. Zero trusts
         * the clocks to agree exactly.
         */
        public Builder maxClockSkew(Duration maxClockSkew) {
            Require.unset(this.maxClockSkew, "maxClockSkew");
            Require.notNegative(maxClockSkew, "maxClockSkew");
            if (maxClockSkew.toNanos() % 1_000_000 != 0) {
                throw new IllegalArgumentException("maxClockSkew must be whole milliseconds, but was " + maxClockSkew);
            }
            this.maxClockSkew = maxClockSkew;
            return this;
        }

        /**
         * The largest response, body and headers in bytes, that a completion stores (4 MiB by default); a
         * larger one is refused with a {@link StoreUnavailableException}. A body that does not fit in the
         * record's item (DynamoDB's 400 KB) is stored in items of its own, about 400 KB each.
         */
        public Builder maxResponseSize(int bytes) {
            Require.unset(this.maxResponseSize, "maxResponseSize");
            this.maxResponseSize = Require.between(bytes, 0, Integer.MAX_VALUE - 8, "maxResponseSize");
            return this;
        }

        public DynamoDbIdempotencyStore build() {
            return new DynamoDbIdempotencyStore(this);
        }
    }
}
