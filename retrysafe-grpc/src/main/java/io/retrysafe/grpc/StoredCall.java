package io.retrysafe.grpc;

import io.grpc.Metadata;
import io.grpc.Status;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A unary call's answer as a {@link StoredResponse}, and back: the response message's bytes as the method's
 * marshaller wrote them, the status and the headers and trailers. The stored status is the HTTP status of the
 * gRPC code (as {@code google.rpc.Code} maps them, but {@code CANCELLED} as 408), so that an engine's
 * {@link io.retrysafe.OutcomePolicy} decides as it does for HTTP: the answers that say "try again"
 * ({@code CANCELLED}, {@code ABORTED}, {@code ALREADY_EXISTS}, {@code RESOURCE_EXHAUSTED}) and server failures release
 * the key; the exact code is kept beside it. Headers and trailers that carry credentials or session state
 * ({@link HeaderCodec#NEVER_STORED}) are sent on the first answer and never stored.
 */
record StoredCall(Status status, Metadata headers, byte[] message, Metadata trailers) {
    private static final String CODE = "grpc-status";
    private static final String DESCRIPTION = "grpc-message";
    /** Present when the call sent a message: an empty protobuf message has no bytes. */
    private static final String MESSAGE = "grpc-response-message";
    /** Metadata names hold no '/', so these prefixes cannot meet a name of the call's own (stores refuse ':'). */
    private static final String HEADER = "h/";
    private static final String TRAILER = "t/";

    StoredResponse encode() {
        Map<String, List<String>> stored = new LinkedHashMap<>();
        stored.put(CODE, List.of(Integer.toString(status.getCode().value())));
        if (status.getDescription() != null) {
            stored.put(DESCRIPTION, List.of(status.getDescription()));
        }
        if (message != null) {
            stored.put(MESSAGE, List.of("1"));
        }
        put(stored, HEADER, headers);
        put(stored, TRAILER, trailers);
        return StoredResponse.of(httpStatus(status.getCode()), stored, message == null ? new byte[0] : message);
    }

    static StoredCall decode(StoredResponse stored) {
        Map<String, List<String>> h = stored.headers();
        Status status = Status.fromCodeValue(Integer.parseInt(h.get(CODE).get(0)));
        if (h.containsKey(DESCRIPTION)) {
            status = status.withDescription(h.get(DESCRIPTION).get(0));
        }
        return new StoredCall(status, metadata(h, HEADER), h.containsKey(MESSAGE) ? stored.body() : null,
                metadata(h, TRAILER));
    }

    private static void put(Map<String, List<String>> stored, String prefix, Metadata metadata) {
        for (String name : metadata.keys()) {
            if (HeaderCodec.NEVER_STORED.contains(name)) {
                continue;
            }
            List<String> values = new ArrayList<>();
            if (name.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
                for (byte[] v : metadata.getAll(Metadata.Key.of(name, Metadata.BINARY_BYTE_MARSHALLER))) {
                    values.add(Base64.getEncoder().encodeToString(v));
                }
            } else {
                metadata.getAll(Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER)).forEach(values::add);
            }
            stored.put(prefix + name, values);
        }
    }

    private static Metadata metadata(Map<String, List<String>> stored, String prefix) {
        Metadata metadata = new Metadata();
        stored.forEach((name, values) -> {
            if (!name.startsWith(prefix)) {
                return;
            }
            String key = name.substring(prefix.length());
            for (String v : values) {
                if (key.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
                    metadata.put(Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER), Base64.getDecoder().decode(v));
                } else {
                    metadata.put(Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER), v);
                }
            }
        });
        return metadata;
    }

    /** The HTTP status of a gRPC code, for the engine's outcome policy. */
    static int httpStatus(Status.Code code) {
        return switch (code) {
            case OK -> 200;
            case CANCELLED -> 408; // the client went away: try again, as 408 says (google.rpc.Code names 499)
            case INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE -> 400;
            case UNAUTHENTICATED -> 401;
            case PERMISSION_DENIED -> 403;
            case NOT_FOUND -> 404;
            case ALREADY_EXISTS, ABORTED -> 409;
            case RESOURCE_EXHAUSTED -> 429;
            case UNIMPLEMENTED -> 501;
            case UNAVAILABLE -> 503;
            case DEADLINE_EXCEEDED -> 504;
            case UNKNOWN, INTERNAL, DATA_LOSS -> 500;
        };
    }
}
