package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.internal.CanonicalJson;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.function.IntFunction;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The memory a canonical form needs is a small multiple of the body's size, whatever the body's shape: measured
 * as the bytes this thread allocates (garbage included), not as time.
 */
class CanonicalJsonAllocationTest {
    private static final int BODY_BYTES = 1 << 20;
    /** The output, its growth and final copy, one scratch copy for reordering members, and three ints per member. */
    private static final long MAX_BYTES_PER_BODY_BYTE = 8;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @ParameterizedTest
    @ValueSource(strings = {"small-integers", "decimals", "many-members", "long-strings", "escaped-strings",
            "nested-objects", "unicode"})
    void canonicalFormAllocatesASmallMultipleOfTheBody(String shape) {
        byte[] body = body(shape);
        CanonicalJson.canonicalize(body); // warm up: class loading is not the body's cost
        CanonicalJson.canonicalize(body, List.of("/a", "/k1"));

        long whole = allocatedBy(() -> CanonicalJson.canonicalize(body));
        long selected = allocatedBy(() -> CanonicalJson.canonicalize(body, List.of("/a", "/k1")));

        assertThat(whole).as("bytes allocated for the canonical form of %d bytes of %s", body.length, shape)
                .isLessThanOrEqualTo(MAX_BYTES_PER_BODY_BYTE * body.length);
        assertThat(selected).as("bytes allocated for selected members of %d bytes of %s", body.length, shape)
                .isLessThanOrEqualTo(MAX_BYTES_PER_BODY_BYTE * body.length);
    }

    private static long allocatedBy(Runnable work) {
        long id = Thread.currentThread().getId();
        long before = THREADS.getThreadAllocatedBytes(id);
        work.run();
        return THREADS.getThreadAllocatedBytes(id) - before;
    }

    private static byte[] body(String shape) {
        return switch (shape) {
            case "small-integers" -> array(i -> Integer.toString(i % 10));
            case "decimals" -> array(i -> "1." + (i % 10) + "e" + (i % 3));
            case "many-members" -> object(i -> "\"k" + i + "\":" + (i % 10));
            case "long-strings" -> array(i -> "\"" + "x".repeat(1000) + "\"");
            case "escaped-strings" -> array(i -> "\"\\u00e9\\n\\\"\"");
            case "nested-objects" -> array(i -> "{\"b\":{\"a\":[1,true,null]},\"a\":\"v\"}");
            case "unicode" -> array(i -> "\"é€😀\"");
            default -> throw new IllegalArgumentException(shape);
        };
    }

    private static byte[] array(IntFunction<String> item) {
        return join("[", item, "]");
    }

    private static byte[] object(IntFunction<String> member) {
        return join("{\"a\":0,", member, "}");
    }

    private static byte[] join(String open, IntFunction<String> item, String close) {
        StringBuilder json = new StringBuilder(BODY_BYTES + 64).append(open);
        for (int i = 0; json.length() < BODY_BYTES; i++) {
            if (i > 0) {
                json.append(',');
            }
            json.append(item.apply(i));
        }
        return json.append(close).toString().getBytes(UTF_8);
    }
}
