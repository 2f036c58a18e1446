package io.retrysafe.inbox.tck;

import io.retrysafe.Backoff;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.PayloadBytes;
import io.retrysafe.internal.Require;

/**
 * How the harness builds the consumer it starts for one test: each value goes to the adapter's own
 * option of that name (the inbox's {@code maxAttempts}, {@code backoff}, {@code payloadBytes},
 * {@code listener}). The consumer reads bodies as {@code byte[]}.
 */
public record ConsumerSpec(ContractHandler handler, int maxAttempts, Backoff backoff, PayloadBytes payloadBytes,
        InboxListener listener) {

    public ConsumerSpec {
        Require.notNull(handler, "handler");
        Require.between(maxAttempts, 1, Integer.MAX_VALUE, "maxAttempts");
        Require.notNull(backoff, "backoff");
        Require.notNull(payloadBytes, "payloadBytes");
        Require.notNull(listener, "listener");
    }
}
