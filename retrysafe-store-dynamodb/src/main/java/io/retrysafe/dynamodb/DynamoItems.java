package io.retrysafe.dynamodb;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.retrysafe.Fingerprint;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import software.amazon.awssdk.core.SdkBytes;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * The items' layout: attribute names, how values are written and read back. A record is one item whose
 * partition key is {@link IdempotencyKey#hash()}; a response body too large for it lives in body items
 * of its own, {@code hash + "#body#" + ref + "#" + n}, written before the completion that names them.
 * Times are epoch milliseconds of the writer's clock; {@link #TTL} is epoch seconds, for DynamoDB's TTL.
 */
final class DynamoItems {
    static final String ID = "id";
    static final String FINGERPRINT = "fingerprint";
    static final String STATUS = "status";
    static final String TOKEN = "token";
    static final String ATTEMPT = "attempt";
    static final String CREATED = "created";
    static final String LEASE = "lease";
    static final String COMPLETED = "completed";
    static final String EXPIRES = "expires";
    /** The table's TTL attribute: epoch seconds, after which DynamoDB may delete the item. */
    static final String TTL = "ttl";
    /** The id of the last fenced write (complete, release, renew), to recognise one the SDK sent twice. */
    static final String WRITE = "write";
    static final String RESPONSE_STATUS = "rstatus";
    static final String RESPONSE_HEADERS = "rheaders";
    /** The body, when it fits in the record's item. */
    static final String RESPONSE_BODY = "rbody";
    /** Otherwise: which body items hold it, how many, and its length. */
    static final String BODY_REF = "rbodyref";
    static final String BODY_PARTS = "rbodyparts";
    static final String BODY_LENGTH = "rbodylength";
    /** A body item's bytes. */
    static final String PART = "part";

    /** DynamoDB's bound on one item: names and values of every attribute, in bytes. */
    static final int ITEM_LIMIT = 400 * 1024;
    /**
     * What a record without its body takes at most, generously: the attribute names and the values of
     * fixed size (a 64-digit id, 64-digit fingerprint, two UUIDs, numbers of at most 21 bytes).
     */
    static final int RECORD_OVERHEAD = 1024;
    /** A body item's bytes: what is left of an item after its id (at most 160 bytes) and names. */
    static final int PART_SIZE = ITEM_LIMIT - RECORD_OVERHEAD;

    private DynamoItems() {
    }

    static AttributeValue s(String value) {
        return AttributeValue.fromS(value);
    }

    static AttributeValue n(long value) {
        return AttributeValue.fromN(Long.toString(value));
    }

    static AttributeValue b(byte[] value, int from, int to) {
        return AttributeValue.fromB(SdkBytes.fromByteArrayUnsafe(Arrays.copyOfRange(value, from, to)));
    }

    static long number(Map<String, AttributeValue> item, String name) {
        return Long.parseLong(item.get(name).n());
    }

    static Instant instant(Map<String, AttributeValue> item, String name) {
        AttributeValue v = item.get(name);
        return v == null ? null : Instant.ofEpochMilli(Long.parseLong(v.n()));
    }

    /** TTL in epoch seconds: rounded up, so that DynamoDB never deletes an item before {@code epochMillis}. */
    static long ttlSeconds(long epochMillis) {
        return Math.floorDiv(epochMillis + 999, 1000);
    }

    static String partId(String recordId, String ref, int part) {
        return recordId + "#body#" + ref + "#" + part;
    }

    static String headers(StoredResponse response) {
        return HeaderCodec.encode(response.headers());
    }

    /** How many bytes of a record's item the response's headers take (UTF-8, as DynamoDB counts a string). */
    static int headerBytes(String encodedHeaders) {
        return encodedHeaders.getBytes(UTF_8).length;
    }

    static boolean isExpired(Map<String, AttributeValue> item, long now) {
        return number(item, EXPIRES) <= now;
    }

    static RecordStatus status(Map<String, AttributeValue> item) {
        return RecordStatus.valueOf(item.get(STATUS).s());
    }

    static Fingerprint fingerprint(Map<String, AttributeValue> item) {
        return Fingerprint.ofHex(item.get(FINGERPRINT).s());
    }

    static boolean hasBodyParts(Map<String, AttributeValue> item) {
        return item.containsKey(BODY_REF);
    }

    /** The response of a completed record whose body is in the item, or {@code body} read from its parts. */
    static StoredResponse response(Map<String, AttributeValue> item, byte[] body) {
        AttributeValue inline = item.get(RESPONSE_BODY);
        byte[] bytes = body != null ? body : inline == null ? new byte[0] : inline.b().asByteArray();
        return StoredResponse.of(Math.toIntExact(number(item, RESPONSE_STATUS)),
                HeaderCodec.decode(item.get(RESPONSE_HEADERS).s()), bytes);
    }

    static IdempotencyRecord record(IdempotencyKey key, Map<String, AttributeValue> item,
            Optional<StoredResponse> response) {
        return new IdempotencyRecord(key, fingerprint(item), status(item), Math.toIntExact(number(item, ATTEMPT)),
                instant(item, CREATED), instant(item, LEASE), instant(item, COMPLETED), instant(item, EXPIRES),
                response);
    }

    /** {@code #name -> name} for each attribute an expression names: DynamoDB refuses unused ones. */
    static Map<String, String> names(String... attributes) {
        Map<String, String> names = new HashMap<>();
        for (String a : attributes) {
            names.put("#" + a, a);
        }
        return names;
    }
}
