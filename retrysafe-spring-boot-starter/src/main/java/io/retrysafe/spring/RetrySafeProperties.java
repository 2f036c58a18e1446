package io.retrysafe.spring;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * {@code retrysafe.*}: every setting of the starter, immutable once bound. Defaults are the
 * library's {@code DEFAULT_*} constants.
 *
 * @param enabled whether the starter configures anything at all
 * @param name prefix of every log line and the {@code name} tag of every meter
 * @param mode {@code transactional} (key, the handler's writes and the response commit in one
 *     transaction; needs the JDBC store, or in a reactive application the R2DBC store) or
 *     {@code standalone} (the key commits first; for side effects outside the database). Not set:
 *     transactional with the JDBC or R2DBC store, standalone with any other; set to {@code transactional}
 *     with another store, the application does not start
 * @param failOpen run requests unprotected when the store fails, instead of answering 503
 * @param fastFilter Redis in front of the store: cached replays and early 409s without the database
 * @param kafka exactly-once {@code @KafkaListener} record listeners (Spring Kafka)
 * @param rabbit exactly-once {@code @RabbitListener} listeners (Spring AMQP)
 * @param atRest encryption of stored responses (AES-GCM) with rotatable keys
 * @param completion standalone mode: how a failed write of an outcome is tried again
 * @param phases phased operations (work that calls out): the bound on saved values and the completer
 */
@ConfigurationProperties("retrysafe")
public record RetrySafeProperties(@DefaultValue("true") boolean enabled, @DefaultValue("retrysafe") String name,
        Mode mode, @DefaultValue("false") boolean failOpen, @DefaultValue Store store,
        @DefaultValue Policy policy, @DefaultValue Key key, @DefaultValue Http http, @DefaultValue Purge purge,
        @DefaultValue FastFilter fastFilter, @DefaultValue Kafka kafka, @DefaultValue Rabbit rabbit,
        @DefaultValue AtRest atRest, @DefaultValue Completion completion, @DefaultValue Phases phases) {

    public enum Mode {
        TRANSACTIONAL, STANDALONE
    }

    public enum StoreType {
        JDBC, MEMORY, REDIS, R2DBC, DYNAMODB
    }

    /** Where a Kafka record's message id comes from (as {@code io.retrysafe.kafka.MessageIds}). */
    public enum MessageIdSource {
        /** The header {@code retrysafe.kafka.header}: the producer sets the same id on every retry of a send. */
        HEADER,
        /** The CloudEvents id, header {@code ce_id} (Kafka binding, binary content mode). */
        CLOUDEVENTS,
        /** {@code <partition>@<offset>}: for producers that set no id; catches redeliveries, not producer duplicates. */
        TOPIC_PARTITION_OFFSET
    }

    /** How a property's value names {@code value}: {@code LAST_NO_LOOKUP} is {@code last-no-lookup}, for messages. */
    static String spelled(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The JDBC table's layout: {@code standard}, or {@code partitioned} by expiry day (PostgreSQL). */
    public enum StoreLayout {
        STANDARD, PARTITIONED
    }

    /**
     * When transactional mode writes the key: {@code first} (before the handler), {@code last} (with the commit,
     * read before the handler), or {@code last-no-lookup} (with the commit, nothing read before).
     */
    public enum StoreKeyOrder {
        FIRST, LAST, LAST_NO_LOOKUP
    }

    /**
     * @param type {@code jdbc} (the application's DataSource; the default when there is one),
     *     {@code memory}, {@code redis} (standalone mode only; needs {@code retrysafe-store-redis}),
     *     {@code dynamodb} (standalone mode only; needs {@code retrysafe-store-dynamodb}), or
     *     {@code r2dbc} (a reactive application's R2DBC ConnectionFactory, PostgreSQL; the default of a
     *     reactive application when there is one; needs {@code retrysafe-store-r2dbc})
     * @param table the records table, optionally schema-qualified
     * @param lockTimeout how long a duplicate waits for the first request's transaction before 409
     * @param initializeSchema create the table at start-up ({@code CREATE TABLE IF NOT EXISTS}); off
     *     by default: ship {@code schema-postgresql.sql} in your migrations instead
     * @param maxEntries bound of the in-memory store
     * @param redis the Redis store, for {@code type=redis}
     * @param dynamodb the DynamoDB store, for {@code type=dynamodb}
     * @param layout {@code partitioned}: the JDBC table partitioned by expiry day (PostgreSQL only), purged by
     *     dropping whole days; its partitions are maintained at start and with every purge
     * @param partitionDaysAhead with {@code layout=partitioned}: days after today whose partitions exist ahead;
     *     at least the longest retention in days
     * @param keyOrder transactional mode: {@code first}, the key claimed before the handler runs (a duplicate
     *     in flight waits, then replays); or {@code last}, the record inserted with the commit (cheaper; a
     *     duplicate in flight runs the handler too and is rolled back); or {@code last-no-lookup}, as {@code last}
     *     with nothing read before the handler (a retry of a completed key runs the handler too, is rolled back,
     *     and replays); both need PostgreSQL's standard layout and handlers whose writes are all in the transaction
     * @param maxWaitingClaims how many claims may wait on a key held by another transaction at once (each
     *     holding a pooled connection); the others answer 409 at once. Not set: half the pool's maximum size
     *     when the DataSource tells it (HikariCP), else unbounded
     * @param maxBytes bound of the in-memory store in bytes (keys and stored responses, estimated)
     * @param scopeSharePercent the share of the in-memory store's entries and bytes one scope may hold
     */
    public record Store(StoreType type, @DefaultValue("retrysafe_record") String table,
            @DefaultValue("5s") Duration lockTimeout, @DefaultValue("false") boolean initializeSchema,
            @DefaultValue("100000") int maxEntries, @DefaultValue Redis redis,
            @DefaultValue("standard") StoreLayout layout, @DefaultValue("7") int partitionDaysAhead,
            @DefaultValue("first") StoreKeyOrder keyOrder, Integer maxWaitingClaims,
            @DefaultValue("64MB") DataSize maxBytes, @DefaultValue("50") int scopeSharePercent,
            @DefaultValue Dynamodb dynamodb) {
    }

    /**
     * @param uri the Redis to use ({@code redis://host:6379}, {@code rediss://…}, {@code redis-sentinel://…});
     *     not set: the application's Lettuce {@code RedisClient} or {@code RedisClusterClient} bean
     * @param keyPrefix what every Redis key of the store starts with
     * @param commandTimeout bound on each store call; past it the request gets 503
     * @param startupWait how long the application's start waits for the store to connect and load its scripts
     *     (a cluster's topology learnt), so that its first requests find it ready; past it the application starts
     *     anyway, the store's health is DOWN, and the store connects on first use
     * @param waitForReplicas replicas that must acknowledge each claim and completion ({@code WAIT}) before it
     *     counts, so that a failover does not lose it; 0 (the default): none waited for
     * @param replicaTimeout how long a claim or a completion waits for them; a claim not acknowledged in time is
     *     refused (503), a completion still answers
     */
    public record Redis(String uri, @DefaultValue("retrysafe:") String keyPrefix,
            @DefaultValue("2s") Duration commandTimeout, @DefaultValue("10s") Duration startupWait,
            @DefaultValue("0") int waitForReplicas, @DefaultValue("500ms") Duration replicaTimeout) {
    }

    /**
     * @param tableName the table
     * @param createTable create the table at start-up if it is missing (on-demand capacity, TTL on {@code ttl});
     *     off by default: create it with the application's infrastructure instead
     * @param maxClockSkew how far apart the clocks of the instances sharing the table may be; a lease is taken
     *     over only this long after it ended
     * @param maxResponseSize the largest response a completion stores; larger is refused
     * @param endpoint the endpoint of the client the starter makes (a VPC endpoint, a local server); not set:
     *     the SDK's for the region. Ignored when the application has a {@code DynamoDbClient} bean
     * @param region the region of the client the starter makes; not set: the SDK's default chain
     * @param callTimeout bound on each call of the client the starter makes; past it the request gets 503
     */
    public record Dynamodb(@DefaultValue("retrysafe_idempotency") String tableName,
            @DefaultValue("false") boolean createTable, @DefaultValue("1s") Duration maxClockSkew,
            @DefaultValue("4MB") DataSize maxResponseSize, URI endpoint, String region,
            @DefaultValue("2s") Duration callTimeout) {
    }

    /**
     * Redis as a fast filter in front of the store (the store stays the source of truth).
     *
     * @param enabled wrap the filter's executor; needs {@code retrysafe-store-redis}
     * @param redisUri the Redis to use; not set: the application's Lettuce {@code RedisClient} or
     *     {@code RedisClusterClient} bean
     * @param keyPrefix what every Redis key of the fast filter starts with
     * @param timeout bound on each Redis call; past it the call is a miss and the request goes to the store
     * @param markerTtl how long an in-flight marker lives if its holder dies; not set: {@code retrysafe.policy.lease-ttl}
     * @param replayTtl the longest a cached response lives in Redis (less when less retention is left)
     * @param failureThreshold consecutive Redis failures that open the breaker
     * @param openBackoff how long the breaker first stays open; doubled after each failed probe
     * @param maxOpenBackoff the longest the breaker stays open between probes
     * @param localReplays completed responses also kept in each process, in front of Redis
     */
    public record FastFilter(@DefaultValue("false") boolean enabled, String redisUri,
            @DefaultValue("retrysafe:ff:") String keyPrefix, @DefaultValue("100ms") Duration timeout,
            Duration markerTtl, @DefaultValue("1h") Duration replayTtl, @DefaultValue("5") int failureThreshold,
            @DefaultValue("1s") Duration openBackoff, @DefaultValue("30s") Duration maxOpenBackoff,
            @DefaultValue LocalReplays localReplays) {
    }

    /**
     * Completed responses kept in the process as well as in Redis: a retry of a key this process stored or
     * replayed a moment ago is answered without a round trip. Off while {@code maxSize} is 0.
     *
     * @param maxSize the most the kept responses take in all (bodies, headers, and about 256 bytes each); the
     *     least recently used go first
     * @param ttl the longest one is kept; a copy replayed from Redis may outlive Redis's copy by this much
     */
    public record LocalReplays(@DefaultValue("0B") DataSize maxSize, @DefaultValue("1m") Duration ttl) {
    }

    /**
     * Exactly-once {@code @KafkaListener} record listeners: the message id is claimed in the
     * listener's database transaction, which commits before the container commits the offset.
     *
     * @param enabled add the inbox advice to the listener container factories; needs the JDBC store
     *     in transactional mode, spring-kafka and {@code retrysafe-kafka}
     * @param messageId where the message id comes from
     * @param header the header for {@code message-id=header}
     * @param containerFactories bean names of the container factories covered; empty: all of them
     * @param deadLetters who retries a failing record and publishes what cannot be processed; by
     *     default the inbox
     * @param maxAttempts how many times the listener runs for one record before the record is
     *     dead-lettered (with {@code dead-letters=error-handler}: by the starter's error handler)
     * @param backoff the wait before the second attempt, doubled for each later one up to
     *     {@code maxBackoff} (with {@code dead-letters=error-handler}: the starter's error handler's)
     * @param maxBackoff the longest wait between two attempts
     * @param deadLetterSuffix the dead-letter topic is the record's topic with this suffix (with
     *     {@code dead-letters=error-handler}: the starter's error handler's)
     */
    public record Kafka(@DefaultValue("false") boolean enabled, @DefaultValue("header") MessageIdSource messageId,
            @DefaultValue("idempotency-key") String header, List<String> containerFactories,
            @DefaultValue("inbox") KafkaDeadLetters deadLetters, @DefaultValue("3") int maxAttempts,
            @DefaultValue("200ms") Duration backoff, @DefaultValue("5s") Duration maxBackoff,
            @DefaultValue(".DLT") String deadLetterSuffix) {

        public Kafka {
            if (maxAttempts < 1) {
                throw new IllegalArgumentException("retrysafe.kafka.max-attempts must be at least 1, but was "
                        + maxAttempts);
            }
            if (backoff.isNegative() || backoff.isZero() || backoff.compareTo(maxBackoff) > 0) {
                throw new IllegalArgumentException("retrysafe.kafka.backoff must be positive and at most "
                        + "retrysafe.kafka.max-backoff, but was backoff=" + backoff + ", max-backoff=" + maxBackoff);
            }
        }
    }

    /** Who retries a failing Kafka record and publishes what cannot be processed. */
    public enum KafkaDeadLetters {
        /**
         * Spring Kafka's error handler: the advice runs the listener once per call and throws what
         * cannot pass. For an application that keeps its own {@code CommonErrorHandler} (another
         * recoverer, retry topics); without one, the starter's {@code DefaultErrorHandler} retries with
         * the inbox's attempts and back-off and publishes to the same topic. Spring's
         * {@code DeadLetterPublishingRecoverer}s add the inbox's {@code retrysafe-dlt-*} headers to
         * Spring's own {@code kafka_dlt-*}.
         */
        ERROR_HANDLER,
        /**
         * The default. The inbox, as for every other consumer: {@code max-attempts} in the call with
         * back-off, then the record goes to {@code <topic><dead-letter-suffix>} through the
         * application's {@code KafkaTemplate}, with the inbox's {@code retrysafe-dlt-*} headers, and
         * the call returns.
         */
        INBOX
    }

    /**
     * {@code retrysafe.rabbit.*}: every {@code @RabbitListener} of the covered container factories takes
     * each message's effect once (see docs/messaging.md, Spring AMQP).
     *
     * @param enabled cover the listeners; needs spring-rabbit and retrysafe-rabbitmq
     * @param consumerName the scope's middle part, {@code rabbitmq:<consumer name>:<queue>}; not set:
     *     {@code spring.application.name}
     * @param messageIdHeader the header that holds the message id; not set: the AMQP {@code message-id}
     *     property
     * @param deadLetterExchange where dead letters are published; empty: the default exchange
     * @param deadLetterSuffix a dead letter's routing key is the queue's name and this
     * @param maxAttempts runs of a failing listener before its message is dead-lettered
     * @param backoff the wait before the second run, doubled for each later one
     * @param maxBackoff the longest wait between two runs
     * @param containerFactories the container factories covered (bean names); empty: all
     */
    public record Rabbit(@DefaultValue("false") boolean enabled, String consumerName, String messageIdHeader,
            @DefaultValue("") String deadLetterExchange, @DefaultValue(".dlq") String deadLetterSuffix,
            @DefaultValue("3") int maxAttempts, @DefaultValue("200ms") Duration backoff,
            @DefaultValue("5s") Duration maxBackoff, List<String> containerFactories) {
    }

    /**
     * Stored responses (headers and body) encrypted with AES-GCM before any store or the fast filter
     * sees them. Off while no key is configured.
     *
     * @param keys key id → base64 key of 16, 24 or 32 bytes; every id whose records may still be live
     * @param currentKey the id of the key new records are encrypted with
     * @param enabled with keys configured: encrypt for every route without its own {@code at-rest} and
     *     for {@code @Idempotent} methods; {@code false}: only for routes with {@code at-rest: true}
     * @param readsUnsealed replay responses stored before encryption was turned on, as they are
     */
    public record AtRest(Map<String, String> keys, String currentKey, @DefaultValue("true") boolean enabled,
            @DefaultValue("false") boolean readsUnsealed) {
    }

    /**
     * Standalone mode: the handler ran, and writing its outcome failed. It is written again before the
     * request is answered {@code 503 /problems/outcome-unknown}.
     *
     * @param attempts writes in all, the first included (1 to 10)
     * @param backoff the first pause between two writes, doubled after each (at most 10s)
     */
    public record Completion(@DefaultValue("4") int attempts, @DefaultValue("100ms") Duration backoff) {
    }

    /**
     * @param retention how long a key protects its intent
     * @param leaseTtl how long an attempt holds its key before another may take it over (standalone)
     * @param waitForResult how long a duplicate waits for the attempt in flight before 409
     * @param retryAfter the {@code Retry-After} sent with 409 and 503
     */
    public record Policy(@DefaultValue("24h") Duration retention, @DefaultValue("30s") Duration leaseTtl,
            @DefaultValue("0s") Duration waitForResult, @DefaultValue("1s") Duration retryAfter) {
    }

    /**
     * @param minLength shortest accepted key; 16 or 32 make guessing another client's key hopeless
     * @param maxLength longest accepted key (at most 255)
     */
    public record Key(@DefaultValue("1") int minLength, @DefaultValue("255") int maxLength) {
    }

    /**
     * @param enabled register the servlet filter
     * @param scope whose intent a key belongs to: {@code principal} (the authenticated user; the
     *     default), {@code header} (the value of {@code scope-header}, e.g. a tenant id set by a
     *     gateway), {@code hashed-header} (an API key, stored hashed), or {@code global} (every caller
     *     shares one scope; only for a single trusted caller)
     * @param scopeHeader the header for {@code header} and {@code hashed-header}
     * @param routes the protected routes; none: POST and PATCH everywhere, when they carry a key
     * @param maxRequestBytes largest body fingerprinted; larger requests get 413
     * @param maxResponseBytes largest response body stored for replay; a larger one is stored without its body
     * @param replayedHeaders response headers stored and replayed; credentials and cookies never are
     * @param asyncTransactional transactional mode, a route with a Spring MVC handler that answers asynchronously
     *     (its transaction cannot follow the work to another thread): {@code standalone} runs that route in
     *     standalone mode, said at start-up; {@code fail} stops the application from starting
     */
    public record Http(@DefaultValue("true") boolean enabled, @DefaultValue("principal") String scope,
            String scopeHeader, List<Route> routes, @DefaultValue("1048576") int maxRequestBytes,
            @DefaultValue("1048576") int maxResponseBytes, Set<String> replayedHeaders,
            @DefaultValue("standalone") AsyncTransactional asyncTransactional) {
    }

    /** What transactional mode does with a route whose handler answers asynchronously. */
    public enum AsyncTransactional {
        /** The route runs in standalone mode: its key commits before the handler runs. */
        STANDALONE,
        /** The application does not start. */
        FAIL
    }

    /**
     * @param method HTTP method
     * @param pattern path inside the application: literal segments, {@code {name}}, a final {@code **}
     * @param keyRequired refuse requests without a key (400) instead of passing them through
     * @param retention this route's retention, when it differs
     * @param jsonMembers JSON Pointers of the members the fingerprint covers; empty: the whole body
     * @param atRest encrypt this route's stored responses with {@code retrysafe.at-rest}; not set: as
     *     {@code retrysafe.at-rest.enabled} says
     */
    public record Route(String method, String pattern, @DefaultValue("true") boolean keyRequired, Duration retention,
            List<String> jsonMembers, Boolean atRest) {
    }

    /**
     * @param enabled schedule the purge of expired records
     * @param cron when, in Spring's six-field cron syntax
     * @param zone the cron's time zone
     * @param batchSize rows deleted per transaction
     * @param maxDutyCycle the share of a run's time its batches may take, more than 0 and at most 1: after a
     *     batch that took t the run pauses t × (1/share − 1), so that claims compete with it less often and
     *     the run takes 1/share as long; 1 (the default): batches back to back
     */
    public record Purge(@DefaultValue("true") boolean enabled, @DefaultValue("0 0 3 * * *") String cron,
            @DefaultValue("UTC") String zone, @DefaultValue("1000") int batchSize,
            @DefaultValue("1") double maxDutyCycle) {
    }

    /**
     * Phased operations on the JDBC store.
     *
     * @param maxSavedBytes the most one operation saves with its key: input, step names and values
     * @param completer the job that drives operations nobody retried to their end
     */
    public record Phases(@DefaultValue("64KB") DataSize maxSavedBytes, @DefaultValue Completer completer) {
    }

    /**
     * The completer of phased operations: runs on every instance, one at a time across them (a database lock).
     *
     * @param enabled whether it runs; it runs only when the application declares {@code PhasedOperation} beans
     * @param interval the pause between the end of one run and the start of the next
     * @param idleFor how long an operation nobody holds stays untouched before the completer takes it over:
     *     longer than clients take to retry
     * @param batchSize operations taken over per run, at most
     */
    public record Completer(@DefaultValue("true") boolean enabled, @DefaultValue("30s") Duration interval,
            @DefaultValue("5m") Duration idleFor, @DefaultValue("100") int batchSize) {
    }
}
