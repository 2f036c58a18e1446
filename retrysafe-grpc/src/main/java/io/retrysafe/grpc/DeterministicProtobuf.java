package io.retrysafe.grpc;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.MessageLite;
import java.io.IOException;
import java.io.UncheckedIOException;

/** Loaded only where protobuf-java is on the class path (an optional dependency). */
final class DeterministicProtobuf {
    private DeterministicProtobuf() {
    }

    static boolean applies(Object message) {
        return message instanceof MessageLite;
    }

    static byte[] bytes(Object message) {
        MessageLite m = (MessageLite) message;
        byte[] bytes = new byte[m.getSerializedSize()];
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        out.useDeterministicSerialization();
        try {
            m.writeTo(out);
        } catch (IOException e) {
            throw new UncheckedIOException("the request message could not be serialised", e);
        }
        out.checkNoSpaceLeft();
        return bytes;
    }
}
