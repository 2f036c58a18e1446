package io.retrysafe.grpc;

import io.grpc.Metadata;
import io.grpc.Status;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A call answered without its handler: a status, and for the refusals a client should retry later, the delay
 * twice: as {@code google.rpc.RetryInfo} in the rich error model's {@code grpc-status-details-bin}, and as
 * {@code grpc-retry-pushback-ms}, which grpc-java's retry policy obeys when the code is one it retries.
 */
record Refusal(Status status, Metadata trailers) {
    static final Metadata.Key<byte[]> STATUS_DETAILS =
            Metadata.Key.of("grpc-status-details-bin", Metadata.BINARY_BYTE_MARSHALLER);
    static final Metadata.Key<String> PUSHBACK = Metadata.Key.of("grpc-retry-pushback-ms",
            Metadata.ASCII_STRING_MARSHALLER);
    private static final String RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo";

    static Refusal of(Status.Code code, String description) {
        return new Refusal(code.toStatus().withDescription(description), new Metadata());
    }

    static Refusal retryAfter(Status.Code code, String description, Duration delay) {
        Metadata trailers = new Metadata();
        trailers.put(STATUS_DETAILS, statusWithRetryInfo(code, description, delay));
        trailers.put(PUSHBACK, Long.toString(delay.toMillis()));
        return new Refusal(code.toStatus().withDescription(description), trailers);
    }

    /** {@code google.rpc.Status{code, message, details: [Any(RetryInfo{retry_delay})]}} in protobuf's encoding. */
    private static byte[] statusWithRetryInfo(Status.Code code, String description, Duration delay) {
        Proto duration = new Proto().varint(1, delay.getSeconds()).varint(2, delay.getNano());
        Proto retryInfo = new Proto().bytes(1, duration.toByteArray());
        Proto any = new Proto().bytes(1, RETRY_INFO_TYPE.getBytes(StandardCharsets.UTF_8))
                .bytes(2, retryInfo.toByteArray());
        return new Proto().varint(1, code.value()).bytes(2, description.getBytes(StandardCharsets.UTF_8))
                .bytes(3, any.toByteArray()).toByteArray();
    }

    /** The two wire types these messages need; zero values are left out, as protobuf leaves them. */
    private static final class Proto extends ByteArrayOutputStream {
        Proto varint(int field, long value) {
            if (value != 0) {
                raw(field << 3);
                raw(value);
            }
            return this;
        }

        Proto bytes(int field, byte[] value) {
            raw(field << 3 | 2);
            raw(value.length);
            write(value, 0, value.length);
            return this;
        }

        private void raw(long value) {
            while ((value & ~0x7FL) != 0) {
                write((int) (value & 0x7F) | 0x80);
                value >>>= 7;
            }
            write((int) value);
        }
    }
}
