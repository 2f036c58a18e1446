package io.retrysafe.grpc;

import io.grpc.MethodDescriptor;
import io.retrysafe.Fingerprint;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The fingerprint of a unary call: its full method name and its request message's bytes. A protobuf message is
 * serialised deterministically (map entries sorted), so that two encodings of one request are one intent; any
 * other message is fingerprinted as the method's request marshaller writes it.
 */
final class RequestFingerprint {
    private static final boolean PROTOBUF = isPresent("com.google.protobuf.MessageLite");

    private RequestFingerprint() {
    }

    static <ReqT> Fingerprint of(MethodDescriptor<ReqT, ?> method, ReqT message) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] name = method.getFullMethodName().getBytes(StandardCharsets.UTF_8);
        out.write(name, 0, name.length);
        out.write(0);
        byte[] bytes = PROTOBUF && DeterministicProtobuf.applies(message) ? DeterministicProtobuf.bytes(message)
                : marshalled(method, message);
        out.write(bytes, 0, bytes.length);
        return Fingerprint.sha256(out.toByteArray());
    }

    private static <ReqT> byte[] marshalled(MethodDescriptor<ReqT, ?> method, ReqT message) {
        try (InputStream in = method.streamRequest(message)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("the request message could not be marshalled", e);
        }
    }

    private static boolean isPresent(String className) {
        try {
            Class.forName(className, false, RequestFingerprint.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
