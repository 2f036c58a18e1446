package io.retrysafe.inbox.tck;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/** A message as the harness read it back from a dead-letter destination: its body and its headers as text. */
public record ReceivedMessage(byte[] payload, Map<String, String> headers) {

    public ReceivedMessage {
        headers = Map.copyOf(headers);
    }

    public String payloadText() {
        return new String(payload, StandardCharsets.UTF_8);
    }
}
