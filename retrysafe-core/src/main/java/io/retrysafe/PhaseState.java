package io.retrysafe;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a phased operation saved with its key: the operation's name and input, the recovery point (the
 * last local step that committed), each saved step's value, and whether a local step of its compensation
 * committed (from then on every attempt resumes the compensation, never the forward path). Immutable;
 * written as a small versioned binary record, opaque to the store: version 1 while the operation goes
 * forward, version 2 (version 1's fields, then a flag) once its compensation began.
 */
final class PhaseState {
    private static final int VERSION = 1;
    private static final int COMPENSATING_VERSION = 2;

    final String operation;
    final byte[] input;
    final String recoveryPoint;
    /** A local step of the operation's compensation committed. */
    final boolean compensating;
    private final Map<String, byte[]> values;

    private PhaseState(String operation, byte[] input, String recoveryPoint, Map<String, byte[]> values,
            boolean compensating) {
        this.operation = operation;
        this.input = input;
        this.recoveryPoint = recoveryPoint;
        this.values = values;
        this.compensating = compensating;
    }

    /** Before the first local step: nothing saved yet. */
    static PhaseState start(String operation, byte[] input) {
        return new PhaseState(operation, input, null, Map.of(), false);
    }

    boolean has(String step) {
        return values.containsKey(step);
    }

    byte[] value(String step) {
        return values.get(step).clone();
    }

    /**
     * This state with {@code saved} added (in order) and the recovery point moved to {@code step}, a step of the
     * compensation if {@code compensation} (once compensating, always).
     */
    PhaseState advancedTo(String step, Map<String, byte[]> saved, boolean compensation) {
        Map<String, byte[]> next = new LinkedHashMap<>(values);
        next.putAll(saved);
        return new PhaseState(operation, input, step, Collections.unmodifiableMap(next), compensating || compensation);
    }

    byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + input.length);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(compensating ? COMPENSATING_VERSION : VERSION);
            out.writeUTF(operation);
            writeBytes(out, input);
            out.writeUTF(recoveryPoint == null ? "" : recoveryPoint);
            out.writeInt(values.size());
            for (Map.Entry<String, byte[]> e : values.entrySet()) {
                out.writeUTF(e.getKey());
                writeBytes(out, e.getValue());
            }
            if (compensating) {
                out.writeBoolean(true);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * @throws IllegalStateException if {@code saved} is not a state this version wrote: a record written
     *     by a newer RetrySafe, or damaged; the operation is not resumed from it
     */
    static PhaseState decode(byte[] saved) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(saved))) {
            int version = in.readUnsignedByte();
            if (version != VERSION && version != COMPENSATING_VERSION) {
                throw new IllegalStateException("saved phase state has version " + version + ", but this RetrySafe "
                        + "reads versions " + VERSION + " and " + COMPENSATING_VERSION);
            }
            String operation = in.readUTF();
            byte[] input = readBytes(in);
            String point = in.readUTF();
            int n = in.readInt();
            Map<String, byte[]> values = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                values.put(in.readUTF(), readBytes(in));
            }
            boolean compensating = version == COMPENSATING_VERSION && in.readBoolean();
            if (in.read() != -1) {
                throw new IllegalStateException("saved phase state has bytes after its end");
            }
            return new PhaseState(operation, input, point.isEmpty() ? null : point,
                    Collections.unmodifiableMap(values), compensating);
        } catch (IOException | RuntimeException e) {
            if (e instanceof IllegalStateException ise) {
                throw ise;
            }
            throw new IllegalStateException("saved phase state is unreadable (" + saved.length + " bytes): " + e, e);
        }
    }

    private static void writeBytes(DataOutputStream out, byte[] b) throws IOException {
        out.writeInt(b.length);
        out.write(b);
    }

    private static byte[] readBytes(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > in.available()) {
            throw new IOException("length " + n + " past the end");
        }
        return in.readNBytes(n);
    }
}
