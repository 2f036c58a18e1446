package io.retrysafe.inbox.tck;

import io.retrysafe.internal.Require;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A message the contract publishes through {@link InboxHarness.Channel#publish}.
 *
 * @param id          the message id, in the header (or property) the adapter reads ids from by default;
 *                    {@code null}: publish the message without one
 * @param payload     the body, byte for byte
 * @param headers     other headers to publish with it; a dead letter must carry them too
 * @param orderingKey what the broker orders by (Kafka's record key, a subject's token); {@code null}: any
 */
public record TestMessage(String id, byte[] payload, Map<String, String> headers, String orderingKey) {

    public TestMessage {
        Require.notNull(payload, "payload");
        headers = Collections.unmodifiableMap(new LinkedHashMap<>(Require.notNull(headers, "headers")));
    }

    public static TestMessage of(String id, String payload) {
        return new TestMessage(id, payload.getBytes(StandardCharsets.UTF_8), Map.of(), null);
    }

    public TestMessage withHeader(String name, String value) {
        Map<String, String> more = new LinkedHashMap<>(headers);
        more.put(name, value);
        return new TestMessage(id, payload, more, orderingKey);
    }

    public TestMessage withOrderingKey(String key) {
        return new TestMessage(id, payload, headers, key);
    }

    public String payloadText() {
        return new String(payload, StandardCharsets.UTF_8);
    }
}
