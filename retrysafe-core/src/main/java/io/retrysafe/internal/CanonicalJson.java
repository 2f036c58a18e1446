package io.retrysafe.internal;

import io.retrysafe.MalformedJsonException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The canonical form of a JSON text: two texts that a JSON reader cannot tell apart have the same
 * canonical bytes, so a client that re-serialises the same request gets the same fingerprint.
 *
 * <p>The input is parsed strictly as RFC 8259 JSON in UTF-8 and written back with
 * <ul>
 * <li>object members sorted by name, names compared as UTF-16 code units (the order of RFC 8785);
 * <li>no white space between tokens;
 * <li>strings as literal UTF-8, escaping only {@code "}, {@code \} and the control characters below
 *     U+0020 ({@code \b \f \n \r \t}, otherwise <code>&#92;u00XX</code> in lower case), so
 *     <code>"&#92;u00e9"</code> and {@code "é"} are the same string;
 * <li>numbers compared by exact decimal value, with arbitrary precision: numerically equal numbers are
 *     equal ({@code 1}, {@code 1.0}, {@code 1e0} and {@code 10E-1} are all {@code 1}; {@code -0} is
 *     {@code 0}), while numbers a {@code double} cannot tell apart stay different. A number is written
 *     in plain digits ({@code 100}, {@code 12.5}, {@code 0.000001}) unless an integer would end in more
 *     than 20 zeros or a fraction would start with more than 5 zeros after the point; then it is
 *     written as one digit, an optional fraction and an exponent ({@code 1e21}, {@code 1.5e-7}).
 * </ul>
 *
 * <p>Rejected with {@link MalformedJsonException}: invalid UTF-8, trailing content after the value,
 * duplicate member names (after unescaping), unpaired surrogates in <code>&#92;u</code> escapes, unescaped
 * control characters, numbers outside the JSON grammar ({@code 01}, {@code 1.}, {@code .5},
 * {@code +1}, {@code NaN}), and arrays and objects nested deeper than {@link #MAX_DEPTH}. A leading
 * UTF-8 byte order mark is ignored, as RFC 8259 allows.
 *
 * <p>The work is linear in the input apart from sorting each object's members, and the parser's
 * recursion is bounded by {@link #MAX_DEPTH}. No tree is built: the canonical form is written while
 * parsing, and each object's members are put in order in place, so the memory needed is a small
 * multiple of the input (the output, one scratch copy, three ints per member), whatever its shape.
 * The input size is not bounded here: the caller bounds what it reads.
 */
public final class CanonicalJson {
    /** The deepest nesting of arrays and objects accepted; deeper input is refused rather than risking the stack. */
    public static final int MAX_DEPTH = 128;

    private static final byte[] UTF8_BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private CanonicalJson() {
    }

    /**
     * The canonical form of a whole JSON text.
     *
     * @throws MalformedJsonException if the bytes are not one JSON text in UTF-8
     */
    public static byte[] canonicalize(byte[] utf8Json) {
        Require.notNull(utf8Json, "utf8Json");
        return new Parser(utf8Json).document().toByteArray();
    }

    /**
     * The canonical form of selected members only, so that fields that may change between retries
     * (a client timestamp, a trace id) do not change the fingerprint. The result is the canonical
     * form of an object that maps each pointer, as given, to the canonical form of the value it
     * resolves to; a pointer that does not resolve is left out, so an absent member differs from
     * one that is {@code null}. The whole input must still be valid JSON.
     *
     * @param jsonPointers RFC 6901 pointers such as {@code "/amount"}, {@code "/payer/iban"},
     *                     {@code "/items/0"}, {@code "/a~1b"} for the member {@code a/b}, or {@code ""}
     *                     for the whole text; at least one, no duplicates
     * @throws IllegalArgumentException if a pointer is malformed, duplicated, or the list is empty
     * @throws MalformedJsonException if the bytes are not one JSON text in UTF-8
     */
    public static byte[] canonicalize(byte[] utf8Json, List<String> jsonPointers) {
        return selecting(jsonPointers).apply(utf8Json);
    }

    /** Checks the pointers once and returns the canonicalizer for them, for a fingerprinter that reuses it. */
    static UnaryOperator<byte[]> selecting(List<String> jsonPointers) {
        Require.notNull(jsonPointers, "jsonPointers");
        if (jsonPointers.isEmpty()) {
            throw new IllegalArgumentException("jsonPointers must name at least one member, but was []");
        }
        String[] pointers = new String[jsonPointers.size()];
        List<List<String>> tokens = new ArrayList<>(pointers.length);
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < pointers.length; i++) {
            String pointer = Require.notNull(jsonPointers.get(i), "jsonPointers[" + i + "]");
            if (!seen.add(pointer)) {
                throw new IllegalArgumentException(
                        "jsonPointers must not contain a pointer twice, but was " + quote(pointer) + " twice");
            }
            pointers[i] = pointer;
        }
        Arrays.sort(pointers);
        for (String pointer : pointers) {
            tokens.add(parsePointer(pointer));
        }
        return utf8Json -> {
            Require.notNull(utf8Json, "utf8Json");
            Out canonical = new Parser(utf8Json).document();
            Out out = new Out(64);
            out.write('{');
            boolean first = true;
            for (int i = 0; i < pointers.length; i++) {
                int value = resolve(canonical, tokens.get(i));
                if (value < 0) {
                    continue;
                }
                if (!first) {
                    out.write(',');
                }
                first = false;
                writeString(pointers[i], out);
                out.write(':');
                out.write(canonical.bytes, value, skip(canonical, value) - value);
            }
            out.write('}');
            return out.toByteArray();
        };
    }

    // ---- JSON Pointer (RFC 6901) ----

    private static List<String> parsePointer(String pointer) {
        for (int i = 0; i < pointer.length(); i++) {
            char c = pointer.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < pointer.length()
                    && Character.isLowSurrogate(pointer.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(
                        "a JSON Pointer must not contain an unpaired surrogate, but was " + quote(pointer));
            }
        }
        if (pointer.isEmpty()) {
            return List.of();
        }
        if (pointer.charAt(0) != '/') {
            throw new IllegalArgumentException("a JSON Pointer must be empty or start with '/', but was " + quote(pointer));
        }
        List<String> tokens = new ArrayList<>();
        StringBuilder token = new StringBuilder();
        for (int i = 1; i <= pointer.length(); i++) {
            char c = i < pointer.length() ? pointer.charAt(i) : '/';
            if (c == '/') {
                tokens.add(token.toString());
                token.setLength(0);
            } else if (c == '~') {
                char next = i + 1 < pointer.length() ? pointer.charAt(i + 1) : 0;
                if (next != '0' && next != '1') {
                    throw new IllegalArgumentException(
                            "in a JSON Pointer '~' must be followed by '0' or '1', but was " + quote(pointer));
                }
                token.append(next == '0' ? '~' : '/');
                i++;
            } else {
                token.append(c);
            }
        }
        return List.copyOf(tokens);
    }

    /**
     * Where the value a pointer refers to starts in the canonical form, or -1 when it refers to nothing in this
     * document. The canonical form has no white space and one spelling per name, so names compare as bytes.
     */
    private static int resolve(Out canonical, List<String> tokens) {
        byte[] c = canonical.bytes;
        int at = 0;
        for (String token : tokens) {
            if (c[at] == '{') {
                Out name = new Out(token.length() + 2);
                writeString(token, name);
                at = member(c, at, name);
            } else if (c[at] == '[') {
                at = element(c, at, arrayIndex(token));
            } else {
                return -1;
            }
            if (at < 0) {
                return -1;
            }
        }
        return at;
    }

    /** The start of the value of the member named {@code name} (canonical, quoted) of the object at {@code at}, or -1. */
    private static int member(byte[] c, int at, Out name) {
        int p = at + 1;
        while (c[p] != '}') {
            int nameEnd = skip(c, p);
            if (Arrays.equals(c, p, nameEnd, name.bytes, 0, name.size)) {
                return nameEnd + 1;
            }
            p = skip(c, nameEnd + 1);
            if (c[p] == ',') {
                p++;
            }
        }
        return -1;
    }

    /** The start of element {@code index} of the array at {@code at}, or -1. */
    private static int element(byte[] c, int at, int index) {
        if (index < 0) {
            return -1;
        }
        int p = at + 1;
        for (int i = 0; c[p] != ']'; i++) {
            if (i == index) {
                return p;
            }
            p = skip(c, p);
            if (c[p] == ',') {
                p++;
            }
        }
        return -1;
    }

    /** The end of the canonical value starting at {@code at}. */
    private static int skip(Out canonical, int at) {
        return skip(canonical.bytes, at, canonical.size);
    }

    private static int skip(byte[] c, int at) {
        return skip(c, at, c.length);
    }

    private static int skip(byte[] c, int at, int size) {
        int depth = 0;
        int p = at;
        do {
            byte b = c[p];
            if (b == '"') {
                p++;
                while (c[p] != '"') {
                    p += c[p] == '\\' ? 2 : 1;
                }
                p++;
            } else if (b == '{' || b == '[') {
                depth++;
                p++;
            } else if (b == '}' || b == ']') {
                depth--;
                p++;
            } else if (b == ',' || b == ':') {
                p++;
            } else {
                while (p < size && c[p] != ',' && c[p] != ':' && c[p] != '}' && c[p] != ']') {
                    p++;
                }
            }
        } while (depth > 0);
        return p;
    }

    /** RFC 6901 array index: "0" or digits without a leading zero; anything else (including "-") is -1. */
    private static int arrayIndex(String token) {
        if (token.isEmpty() || token.length() > 10 || (token.length() > 1 && token.charAt(0) == '0')) {
            return -1;
        }
        long index = 0;
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            index = index * 10 + (c - '0');
        }
        return index > Integer.MAX_VALUE ? -1 : (int) index;
    }

    private static final byte[] TRUE = {'t', 'r', 'u', 'e'};
    private static final byte[] FALSE = {'f', 'a', 'l', 's', 'e'};
    private static final byte[] NULL = {'n', 'u', 'l', 'l'};

    // ---- writing ----

    /** Minimal, deterministic escaping; the string holds no unpaired surrogate (the parser and pointer check refuse them). */
    private static void writeString(String s, Out out) {
        out.write('"');
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            writeChar(cp, out);
            i += Character.charCount(cp);
        }
        out.write('"');
    }

    /** One character of a string, in its one canonical spelling: literal UTF-8, or the minimal escape. */
    private static void writeChar(int c, Out out) {
        if (c == '"' || c == '\\') {
            out.write('\\');
            out.write(c);
        } else if (c < 0x20) {
            out.write('\\');
            switch (c) {
                case '\b' -> out.write('b');
                case '\f' -> out.write('f');
                case '\n' -> out.write('n');
                case '\r' -> out.write('r');
                case '\t' -> out.write('t');
                default -> {
                    out.write('u');
                    out.write('0');
                    out.write('0');
                    out.write(HEX[c >> 4]);
                    out.write(HEX[c & 0xf]);
                }
            }
        } else if (c < 0x80) {
            out.write(c);
        } else if (c < 0x800) {
            out.write(0xC0 | (c >> 6));
            out.write(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out.write(0xE0 | (c >> 12));
            out.write(0x80 | ((c >> 6) & 0x3F));
            out.write(0x80 | (c & 0x3F));
        } else {
            out.write(0xF0 | (c >> 18));
            out.write(0x80 | ((c >> 12) & 0x3F));
            out.write(0x80 | ((c >> 6) & 0x3F));
            out.write(0x80 | (c & 0x3F));
        }
    }

    private static String quote(String s) {
        return "\"" + s + "\"";
    }

    /** A growable byte buffer without ByteArrayOutputStream's locking. */
    private static final class Out {
        private byte[] bytes;
        private int size;

        Out(int capacity) {
            bytes = new byte[Math.max(16, capacity)];
        }

        void write(int b) {
            if (size == bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, 16));
            }
            bytes[size++] = (byte) b;
        }

        void write(byte[] b, int off, int len) {
            if (size + len > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + len));
            }
            System.arraycopy(b, off, bytes, size, len);
            size += len;
        }

        void writeAscii(String s) {
            for (int i = 0; i < s.length(); i++) {
                write(s.charAt(i));
            }
        }

        /** A long in decimal, without a String. */
        void writeLong(long v) {
            if (v < 0) {
                write('-');
            } else {
                v = -v;
            }
            // Negative throughout, so that Long.MIN_VALUE needs no special case.
            int digits = 1;
            for (long rest = v / 10; rest != 0; rest /= 10) {
                digits++;
            }
            int end = size + digits;
            if (end > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, end));
            }
            for (int i = end - 1; i >= size; i--) {
                bytes[i] = (byte) ('0' - (v % 10));
                v /= 10;
            }
            size = end;
        }

        /** The bytes written; the buffer itself when they fill it, as every caller is done writing by then. */
        byte[] toByteArray() {
            return size == bytes.length ? bytes : Arrays.copyOf(bytes, size);
        }
    }

    // ---- parsing ----

    /**
     * The character at {@code p} of a canonical string's content: its code point in the low 32 bits, the
     * number of bytes it takes in the high ones. Canonical escapes are {@code \" \\ \b \f \n \r \t}
     * and <code>&#92;u00XX</code>; everything else is literal, well-formed UTF-8.
     */
    private static long codePointAt(byte[] b, int p) {
        int lead = b[p] & 0xFF;
        if (lead == '\\') {
            int c = b[p + 1];
            return switch (c) {
                case 'b' -> 2L << 32 | '\b';
                case 'f' -> 2L << 32 | '\f';
                case 'n' -> 2L << 32 | '\n';
                case 'r' -> 2L << 32 | '\r';
                case 't' -> 2L << 32 | '\t';
                case 'u' -> 6L << 32 | (Character.digit(b[p + 4], 16) << 4 | Character.digit(b[p + 5], 16));
                default -> 2L << 32 | c;
            };
        }
        if (lead < 0x80) {
            return 1L << 32 | lead;
        }
        if (lead < 0xE0) {
            return 2L << 32 | (lead & 0x1F) << 6 | (b[p + 1] & 0x3F);
        }
        if (lead < 0xF0) {
            return 3L << 32 | (lead & 0x0F) << 12 | (b[p + 1] & 0x3F) << 6 | (b[p + 2] & 0x3F);
        }
        return 4L << 32 | (lead & 0x07) << 18 | (b[p + 1] & 0x3F) << 12 | (b[p + 2] & 0x3F) << 6 | (b[p + 3] & 0x3F);
    }

    /**
     * A code point's rank in UTF-16 code unit order: a character above U+FFFF starts with a high surrogate
     * (U+D800..U+DBFF), so it sorts after U+D7FF and before U+E000..U+FFFF, and among its own kind by value.
     */
    private static int utf16Rank(int codePoint) {
        return codePoint >= 0xE000 && codePoint <= 0xFFFF ? codePoint + 0x110000 : codePoint;
    }

    /**
     * Recursive descent over the bytes, writing the canonical form as it goes: no tree. Each object's members
     * are written in input order, then put in order in place (the only copy, through one reused scratch buffer).
     * Recursion is bounded by MAX_DEPTH, every byte is read a constant number of times.
     */
    private static final class Parser {
        private final byte[] in;
        private final Out out;
        /** For each member of the objects being parsed: where it starts in out, where its name ends, where it was in the input. */
        private int[] members = new int[24]; // 8 members open at once before it grows
        private int memberInts;
        private byte[] scratch;
        private int pos;

        Parser(byte[] in) {
            this.in = in;
            this.out = new Out(in.length);
        }

        Out document() {
            if (in.length >= 3 && in[0] == UTF8_BOM[0] && in[1] == UTF8_BOM[1] && in[2] == UTF8_BOM[2]) {
                pos = 3;
            }
            skipWhiteSpace();
            value(0);
            skipWhiteSpace();
            if (pos < in.length) {
                throw error("expected the end of input after the value");
            }
            return out;
        }

        private void value(int depth) {
            if (pos >= in.length) {
                throw error("expected a value");
            }
            switch (in[pos]) {
                case '{' -> object(depth + 1);
                case '[' -> array(depth + 1);
                case '"' -> string();
                case 't' -> literal(TRUE);
                case 'f' -> literal(FALSE);
                case 'n' -> literal(NULL);
                default -> {
                    if (in[pos] == '-' || isDigit(in[pos])) {
                        number();
                    } else {
                        throw error("expected a value");
                    }
                }
            }
        }

        private void object(int depth) {
            checkDepth(depth);
            pos++;
            out.write('{');
            skipWhiteSpace();
            if (peek() == '}') {
                pos++;
                out.write('}');
                return;
            }
            int first = memberInts;
            while (true) {
                if (peek() != '"') {
                    throw error(memberInts == first ? "expected a member name or '}'" : "expected a member name");
                }
                int nameAt = pos;
                int start = out.size;
                string();
                int nameEnd = out.size;
                skipWhiteSpace();
                if (peek() != ':') {
                    throw error("expected ':' after a member name");
                }
                pos++;
                out.write(':');
                skipWhiteSpace();
                pushMember(start, nameEnd, nameAt);
                value(depth);
                skipWhiteSpace();
                int next = peek();
                pos++;
                if (next == '}') {
                    break;
                }
                if (next != ',') {
                    pos--;
                    throw error("expected ',' or '}' after a member value");
                }
                out.write(',');
                skipWhiteSpace();
            }
            sortMembers(first);
            memberInts = first;
            out.write('}');
        }

        private void pushMember(int start, int nameEnd, int nameAt) {
            if (memberInts + 3 > members.length) {
                members = Arrays.copyOf(members, members.length * 2);
            }
            members[memberInts++] = start;
            members[memberInts++] = nameEnd;
            members[memberInts++] = nameAt;
        }

        /**
         * Puts the members of the object just written (from member {@code first} on) in order of their names,
         * and refuses a name given twice, at the later of its first repeated pair in the input.
         */
        private void sortMembers(int first) {
            int count = (memberInts - first) / 3;
            if (count < 2) {
                return;
            }
            int[] order = new int[count];
            for (int i = 0; i < count; i++) {
                order[i] = i;
            }
            mergeSort(order, new int[count], 0, count, first);
            int duplicateAt = -1;
            boolean sorted = order[0] == 0;
            for (int i = 1; i < count; i++) {
                sorted &= order[i] == i;
                if (compareNames(first, order[i - 1], order[i]) == 0) {
                    // The sort is stable: the later of the two is the repeated one.
                    int at = members[first + 3 * order[i] + 2];
                    duplicateAt = duplicateAt < 0 ? at : Math.min(duplicateAt, at);
                }
            }
            if (duplicateAt >= 0) {
                throw new MalformedJsonException(duplicateAt, "duplicate member name; names must be unique within an object");
            }
            if (sorted) {
                return;
            }
            int regionStart = members[first];
            int regionEnd = out.size;
            int length = regionEnd - regionStart;
            if (scratch == null || scratch.length < length) {
                scratch = new byte[Math.min(out.size, Math.max(length, scratch == null ? 0 : scratch.length * 2))];
            }
            System.arraycopy(out.bytes, regionStart, scratch, 0, length);
            int to = regionStart;
            for (int i = 0; i < count; i++) {
                int m = order[i];
                int from = members[first + 3 * m] - regionStart;
                // A member ends where the next one's comma is, or at the end of the region.
                int end = m + 1 < count ? members[first + 3 * (m + 1)] - regionStart - 1 : length;
                if (i > 0) {
                    out.bytes[to++] = ',';
                }
                System.arraycopy(scratch, from, out.bytes, to, end - from);
                to += end - from;
            }
        }

        private void mergeSort(int[] a, int[] tmp, int from, int to, int first) {
            if (to - from < 2) {
                return;
            }
            int mid = (from + to) >>> 1;
            mergeSort(a, tmp, from, mid, first);
            mergeSort(a, tmp, mid, to, first);
            if (compareNames(first, a[mid - 1], a[mid]) <= 0) {
                return;
            }
            System.arraycopy(a, from, tmp, from, to - from);
            int i = from;
            int j = mid;
            for (int k = from; k < to; k++) {
                if (j >= to || (i < mid && compareNames(first, tmp[i], tmp[j]) <= 0)) {
                    a[k] = tmp[i++];
                } else {
                    a[k] = tmp[j++];
                }
            }
        }

        /** Member names in their canonical spelling, compared as UTF-16 code units. */
        private int compareNames(int first, int x, int y) {
            byte[] b = out.bytes;
            int p = members[first + 3 * x] + 1;
            int pEnd = members[first + 3 * x + 1] - 1;
            int q = members[first + 3 * y] + 1;
            int qEnd = members[first + 3 * y + 1] - 1;
            while (p < pEnd && q < qEnd) {
                long cp = codePointAt(b, p);
                long cq = codePointAt(b, q);
                int kp = utf16Rank((int) cp);
                int kq = utf16Rank((int) cq);
                if (kp != kq) {
                    return Integer.compare(kp, kq);
                }
                p += (int) (cp >>> 32);
                q += (int) (cq >>> 32);
            }
            return Boolean.compare(p < pEnd, q < qEnd);
        }

        private void array(int depth) {
            checkDepth(depth);
            pos++;
            out.write('[');
            skipWhiteSpace();
            if (peek() == ']') {
                pos++;
                out.write(']');
                return;
            }
            while (true) {
                value(depth);
                skipWhiteSpace();
                int next = peek();
                pos++;
                if (next == ']') {
                    break;
                }
                if (next != ',') {
                    pos--;
                    throw error("expected ',' or ']' after an array element");
                }
                out.write(',');
                skipWhiteSpace();
            }
            out.write(']');
        }

        private void checkDepth(int depth) {
            if (depth > MAX_DEPTH) {
                throw new MalformedJsonException(pos,
                        "arrays and objects must nest at most " + MAX_DEPTH + " deep, but was " + depth);
            }
        }

        private void literal(byte[] word) {
            for (byte c : word) {
                if (pos >= in.length || in[pos] != c) {
                    throw error("expected '" + new String(word, java.nio.charset.StandardCharsets.US_ASCII) + "'");
                }
                pos++;
            }
            out.write(word, 0, word.length);
        }

        private void string() {
            pos++;
            out.write('"');
            while (true) {
                if (pos >= in.length) {
                    throw error("expected '\"' to end the string");
                }
                int b = in[pos] & 0xFF;
                if (b == '"') {
                    pos++;
                    out.write('"');
                    return;
                } else if (b == '\\') {
                    escape();
                } else if (b < 0x20) {
                    throw error("expected an escape for a control character in a string");
                } else if (b < 0x80) {
                    out.write(b);
                    pos++;
                } else {
                    utf8(b);
                }
            }
        }

        private void escape() {
            int at = pos;
            pos++;
            int c = peek();
            pos++;
            switch (c) {
                case '"' -> writeChar('"', out);
                case '\\' -> writeChar('\\', out);
                case '/' -> writeChar('/', out);
                case 'b' -> writeChar('\b', out);
                case 'f' -> writeChar('\f', out);
                case 'n' -> writeChar('\n', out);
                case 'r' -> writeChar('\r', out);
                case 't' -> writeChar('\t', out);
                case 'u' -> {
                    char unit = hex4();
                    if (Character.isLowSurrogate(unit)) {
                        throw new MalformedJsonException(at, "expected a high surrogate before the low surrogate \\u"
                                + Integer.toHexString(unit) + ", but was none");
                    }
                    if (Character.isHighSurrogate(unit)) {
                        int lowAt = pos;
                        if (peek() != '\\' || pos + 1 >= in.length || in[pos + 1] != 'u') {
                            throw new MalformedJsonException(lowAt, "expected a \\u escape of a low surrogate after the high surrogate \\u"
                                    + Integer.toHexString(unit) + ", but was " + describe(lowAt));
                        }
                        pos += 2;
                        char low = hex4();
                        if (!Character.isLowSurrogate(low)) {
                            throw new MalformedJsonException(lowAt, "expected a \\u escape of a low surrogate after the high surrogate \\u"
                                    + Integer.toHexString(unit) + ", but was \\u" + String.format("%04x", (int) low));
                        }
                        writeChar(Character.toCodePoint(unit, low), out);
                    } else {
                        writeChar(unit, out);
                    }
                }
                default -> {
                    pos--;
                    throw error("expected one of \" \\ / b f n r t u after '\\'");
                }
            }
        }

        private char hex4() {
            int value = 0;
            for (int i = 0; i < 4; i++) {
                int d = hexDigit(peek());
                if (d < 0) {
                    throw error("expected 4 hex digits after \\u");
                }
                value = (value << 4) | d;
                pos++;
            }
            return (char) value;
        }

        /** Well-formed UTF-8 only (Unicode table 3-7): no overlong forms, no surrogates, nothing above U+10FFFF. */
        private void utf8(int lead) {
            int continuations;
            int min = 0x80;
            int max = 0xBF;
            if (lead >= 0xC2 && lead <= 0xDF) {
                continuations = 1;
            } else if (lead >= 0xE0 && lead <= 0xEF) {
                continuations = 2;
                min = lead == 0xE0 ? 0xA0 : 0x80;
                max = lead == 0xED ? 0x9F : 0xBF;
            } else if (lead >= 0xF0 && lead <= 0xF4) {
                continuations = 3;
                min = lead == 0xF0 ? 0x90 : 0x80;
                max = lead == 0xF4 ? 0x8F : 0xBF;
            } else {
                throw new MalformedJsonException(pos, "expected UTF-8, but was byte " + hexByte(lead)
                        + ", which cannot start a character");
            }
            for (int i = 1; i <= continuations; i++) {
                int at = pos + i;
                int b = at < in.length ? in[at] & 0xFF : -1;
                if (b < min || b > max) {
                    throw new MalformedJsonException(at, "expected a UTF-8 continuation byte in " + hexByte(min) + ".."
                            + hexByte(max) + " after lead byte " + hexByte(lead) + ", but was " + describe(at));
                }
                min = 0x80;
                max = 0xBF;
            }
            // Well-formed UTF-8 is already the canonical spelling of its character.
            out.write(in, pos, continuations + 1);
            pos += continuations + 1;
        }

        private void number() {
            boolean negative = in[pos] == '-';
            if (negative) {
                pos++;
                if (!isDigit(peek())) {
                    throw error("expected a digit after '-'");
                }
            }
            int intStart = pos;
            if (in[pos] == '0') {
                pos++;
                if (isDigit(peek())) {
                    throw error("expected '.', 'e' or the end of the number after a leading 0");
                }
            } else {
                skipDigits();
            }
            int intEnd = pos;
            int fracStart = pos;
            if (peek() == '.') {
                pos++;
                fracStart = pos;
                if (!isDigit(peek())) {
                    throw error("expected a digit after the decimal point");
                }
                skipDigits();
            }
            int fracEnd = pos;
            boolean expNegative = false;
            int expStart = pos;
            if (peek() == 'e' || peek() == 'E') {
                pos++;
                if (peek() == '+' || peek() == '-') {
                    expNegative = peek() == '-';
                    pos++;
                }
                expStart = pos;
                if (!isDigit(peek())) {
                    throw error("expected a digit in the exponent");
                }
                skipDigits();
            }
            Numbers.write(in, negative, intStart, intEnd, fracStart, fracEnd, expNegative, expStart, pos, out);
        }

        private void skipDigits() {
            while (isDigit(peek())) {
                pos++;
            }
        }

        private void skipWhiteSpace() {
            while (pos < in.length) {
                byte b = in[pos];
                if (b != ' ' && b != '\t' && b != '\n' && b != '\r') {
                    return;
                }
                pos++;
            }
        }

        /** The byte at the position, or -1 at the end of input. */
        private int peek() {
            return pos < in.length ? in[pos] & 0xFF : -1;
        }

        private MalformedJsonException error(String expected) {
            return new MalformedJsonException(pos, expected + ", but was " + describe(pos));
        }

        /** One character of the input at most: a message may be logged, and must not carry the body. */
        private String describe(int at) {
            if (at >= in.length) {
                return "the end of input";
            }
            int b = in[at] & 0xFF;
            return b > 0x20 && b < 0x7F ? "'" + (char) b + "'" : "byte " + hexByte(b);
        }

        private static String hexByte(int b) {
            return "0x" + HEX[(b >> 4) & 0xf] + HEX[b & 0xf];
        }

        /** ASCII only: Character.digit would also take other scripts' digits. */
        private static int hexDigit(int b) {
            if (b >= '0' && b <= '9') {
                return b - '0';
            }
            if (b >= 'a' && b <= 'f') {
                return b - 'a' + 10;
            }
            if (b >= 'A' && b <= 'F') {
                return b - 'A' + 10;
            }
            return -1;
        }

        private static boolean isDigit(int b) {
            return b >= '0' && b <= '9';
        }
    }

    /**
     * The one spelling of a number's exact value. The value is computed from the digits as text,
     * not with BigDecimal, whose parsing and stripTrailingZeros are quadratic in the number of
     * digits and whose exponent is limited to an int.
     */
    private static final class Numbers {
        /** Above this many significant exponent digits the exponent no longer fits a long with room to adjust. */
        private static final int LONG_EXPONENT_DIGITS = 18;

        private Numbers() {
        }

        /** Writes the canonical spelling of the number whose parts are at the given places of {@code in}. */
        static void write(byte[] in, boolean negative, int intStart, int intEnd, int fracStart, int fracEnd,
                boolean expNegative, int expStart, int expEnd, Out out) {
            // The value is digits(int + frac) * 10^(exponent - fracLength); digit i of int + frac is digit(i).
            int intLength = intEnd - intStart;
            int all = intLength + (fracEnd - fracStart);
            int first = 0;
            while (first < all && digit(in, intStart, intLength, fracStart, first) == '0') {
                first++;
            }
            if (first == all) {
                out.write('0');
                return;
            }
            int last = all;
            while (digit(in, intStart, intLength, fracStart, last - 1) == '0') {
                last--;
            }
            int length = last - first;
            // value = digits[first, last) * 10^(exponent + shift)
            long shift = (long) (all - last) - (fracEnd - fracStart);
            int expFirst = expStart;
            while (expFirst < expEnd && in[expFirst] == '0') {
                expFirst++;
            }
            if (negative) {
                out.write('-');
            }
            if (expEnd - expFirst > LONG_EXPONENT_DIGITS) {
                // |exponent| >= 10^18 dwarfs shift and the digit count (< 2^31 each): always the exponent form.
                long delta = shift + length - 1;
                writeDigits(in, intStart, intLength, fracStart, first, first + 1, out);
                if (length > 1) {
                    out.write('.');
                    writeDigits(in, intStart, intLength, fracStart, first + 1, last, out);
                }
                out.write('e');
                out.writeAscii(addToExponent(in, expFirst, expEnd, expNegative, delta));
                return;
            }
            long exponent = 0;
            for (int i = expFirst; i < expEnd; i++) {
                exponent = exponent * 10 + (in[i] - '0');
            }
            long e = (expNegative ? -exponent : exponent) + shift;
            long k = e + length - 1; // the power of ten of the first digit
            if (e >= 0 && e <= 20) {
                writeDigits(in, intStart, intLength, fracStart, first, last, out);
                for (long z = 0; z < e; z++) {
                    out.write('0');
                }
            } else if (e < 0 && k >= 0) {
                writeDigits(in, intStart, intLength, fracStart, first, first + (int) k + 1, out);
                out.write('.');
                writeDigits(in, intStart, intLength, fracStart, first + (int) k + 1, last, out);
            } else if (e < 0 && k >= -6) {
                out.write('0');
                out.write('.');
                for (long z = 0; z < -k - 1; z++) {
                    out.write('0');
                }
                writeDigits(in, intStart, intLength, fracStart, first, last, out);
            } else {
                writeDigits(in, intStart, intLength, fracStart, first, first + 1, out);
                if (length > 1) {
                    out.write('.');
                    writeDigits(in, intStart, intLength, fracStart, first + 1, last, out);
                }
                out.write('e');
                out.writeLong(k);
            }
        }

        private static int digit(byte[] in, int intStart, int intLength, int fracStart, int i) {
            return i < intLength ? in[intStart + i] : in[fracStart + i - intLength];
        }

        private static void writeDigits(byte[] in, int intStart, int intLength, int fracStart, int from, int to,
                Out out) {
            for (int i = from; i < to; i++) {
                out.write(digit(in, intStart, intLength, fracStart, i));
            }
        }

        /**
         * The signed decimal text of (±magnitude + delta), where magnitude is the decimal digits
         * in[from, to) without leading zeros and at least 10^18, so |delta| is far smaller and the
         * sign stays; linear in the number of digits.
         */
        private static String addToExponent(byte[] in, int from, int to, boolean negative, long delta) {
            char[] magnitude = new char[to - from + 1];
            magnitude[0] = '0';
            for (int i = from; i < to; i++) {
                magnitude[i - from + 1] = (char) in[i];
            }
            long carry = negative ? -delta : delta; // -m + d = -(m - d)
            for (int i = magnitude.length - 1; carry != 0; i--) {
                long sum = (magnitude[i] - '0') + carry;
                magnitude[i] = (char) ('0' + Math.floorMod(sum, 10L));
                carry = Math.floorDiv(sum, 10L);
            }
            int first = 0;
            while (magnitude[first] == '0') {
                first++;
            }
            String text = new String(magnitude, first, magnitude.length - first);
            return negative ? "-" + text : text;
        }
    }
}
