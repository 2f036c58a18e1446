package io.retrysafe;

import io.retrysafe.internal.Require;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
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
 * recursion is bounded by {@link #MAX_DEPTH}. The input size is not bounded here: the caller bounds
 * what it reads.
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
        Node root = new Parser(utf8Json).document();
        Out out = new Out(utf8Json.length);
        write(root, out);
        return out.toByteArray();
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
            Node root = new Parser(utf8Json).document();
            Out out = new Out(64);
            out.write('{');
            boolean first = true;
            for (int i = 0; i < pointers.length; i++) {
                Node value = resolve(root, tokens.get(i));
                if (value == null) {
                    continue;
                }
                if (!first) {
                    out.write(',');
                }
                first = false;
                writeString(pointers[i], out);
                out.write(':');
                write(value, out);
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

    /** The value a pointer refers to, or null when it refers to nothing in this document. */
    private static Node resolve(Node root, List<String> tokens) {
        Node current = root;
        for (String token : tokens) {
            if (current instanceof Obj object) {
                current = object.get(token);
            } else if (current instanceof Arr array) {
                int index = arrayIndex(token);
                current = index >= 0 && index < array.items().size() ? array.items().get(index) : null;
            } else {
                return null;
            }
            if (current == null) {
                return null;
            }
        }
        return current;
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

    // ---- the tree ----

    private sealed interface Node permits Text, Raw, Arr, Obj {
    }

    /** A string value. */
    private record Text(String value) implements Node {
    }

    /** A number or literal, already in canonical ASCII spelling. */
    private record Raw(String text) implements Node {
    }

    private record Arr(List<Node> items) implements Node {
    }

    /** Members sorted by name as UTF-16 code units, names unique. */
    private record Obj(String[] names, Node[] values) implements Node {
        Node get(String name) {
            int index = Arrays.binarySearch(names, name);
            return index >= 0 ? values[index] : null;
        }
    }

    private record Member(String name, Node value) {
    }

    private static final Raw TRUE = new Raw("true");
    private static final Raw FALSE = new Raw("false");
    private static final Raw NULL = new Raw("null");
    private static final Raw ZERO = new Raw("0");
    private static final Comparator<Member> BY_NAME = Comparator.comparing(Member::name);

    // ---- writing ----

    private static void write(Node node, Out out) {
        if (node instanceof Raw raw) {
            out.writeAscii(raw.text());
        } else if (node instanceof Text text) {
            writeString(text.value(), out);
        } else if (node instanceof Arr array) {
            out.write('[');
            for (int i = 0; i < array.items().size(); i++) {
                if (i > 0) {
                    out.write(',');
                }
                write(array.items().get(i), out);
            }
            out.write(']');
        } else {
            Obj object = (Obj) node;
            out.write('{');
            for (int i = 0; i < object.names().length; i++) {
                if (i > 0) {
                    out.write(',');
                }
                writeString(object.names()[i], out);
                out.write(':');
                write(object.values()[i], out);
            }
            out.write('}');
        }
    }

    /** Minimal, deterministic escaping; the string holds no unpaired surrogate (the parser and pointer check refuse them). */
    private static void writeString(String s, Out out) {
        out.write('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
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
                        out.writeAscii("u00");
                        out.write(HEX[c >> 4]);
                        out.write(HEX[c & 0xf]);
                    }
                }
            } else if (c < 0x80) {
                out.write(c);
            } else if (c < 0x800) {
                out.write(0xC0 | (c >> 6));
                out.write(0x80 | (c & 0x3F));
            } else if (Character.isHighSurrogate(c)) {
                int cp = Character.toCodePoint(c, s.charAt(++i));
                out.write(0xF0 | (cp >> 18));
                out.write(0x80 | ((cp >> 12) & 0x3F));
                out.write(0x80 | ((cp >> 6) & 0x3F));
                out.write(0x80 | (cp & 0x3F));
            } else {
                out.write(0xE0 | (c >> 12));
                out.write(0x80 | ((c >> 6) & 0x3F));
                out.write(0x80 | (c & 0x3F));
            }
        }
        out.write('"');
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

        void writeAscii(String s) {
            for (int i = 0; i < s.length(); i++) {
                write(s.charAt(i));
            }
        }

        byte[] toByteArray() {
            return Arrays.copyOf(bytes, size);
        }
    }

    // ---- parsing ----

    /** Recursive descent over the bytes; recursion is bounded by MAX_DEPTH, every byte is read a constant number of times. */
    private static final class Parser {
        private final byte[] in;
        private final StringBuilder chars = new StringBuilder();
        private int pos;

        Parser(byte[] in) {
            this.in = in;
        }

        Node document() {
            if (in.length >= 3 && in[0] == UTF8_BOM[0] && in[1] == UTF8_BOM[1] && in[2] == UTF8_BOM[2]) {
                pos = 3;
            }
            skipWhiteSpace();
            Node value = value(0);
            skipWhiteSpace();
            if (pos < in.length) {
                throw error("expected the end of input after the value");
            }
            return value;
        }

        private Node value(int depth) {
            if (pos >= in.length) {
                throw error("expected a value");
            }
            switch (in[pos]) {
                case '{':
                    return object(depth + 1);
                case '[':
                    return array(depth + 1);
                case '"':
                    return new Text(string());
                case 't':
                    return literal("true", TRUE);
                case 'f':
                    return literal("false", FALSE);
                case 'n':
                    return literal("null", NULL);
                default:
                    if (in[pos] == '-' || isDigit(in[pos])) {
                        return number();
                    }
                    throw error("expected a value");
            }
        }

        private Node object(int depth) {
            checkDepth(depth);
            pos++;
            skipWhiteSpace();
            if (peek() == '}') {
                pos++;
                return new Obj(new String[0], new Node[0]);
            }
            List<Member> members = new ArrayList<>();
            Set<String> names = new HashSet<>();
            while (true) {
                if (peek() != '"') {
                    throw error(members.isEmpty() ? "expected a member name or '}'" : "expected a member name");
                }
                int nameAt = pos;
                String name = string();
                if (!names.add(name)) {
                    throw new MalformedJsonException(nameAt, "duplicate member name; names must be unique within an object");
                }
                skipWhiteSpace();
                if (peek() != ':') {
                    throw error("expected ':' after a member name");
                }
                pos++;
                skipWhiteSpace();
                members.add(new Member(name, value(depth)));
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
                skipWhiteSpace();
            }
            members.sort(BY_NAME);
            String[] sortedNames = new String[members.size()];
            Node[] values = new Node[members.size()];
            for (int i = 0; i < sortedNames.length; i++) {
                sortedNames[i] = members.get(i).name();
                values[i] = members.get(i).value();
            }
            return new Obj(sortedNames, values);
        }

        private Node array(int depth) {
            checkDepth(depth);
            pos++;
            skipWhiteSpace();
            if (peek() == ']') {
                pos++;
                return new Arr(List.of());
            }
            List<Node> items = new ArrayList<>();
            while (true) {
                items.add(value(depth));
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
                skipWhiteSpace();
            }
            return new Arr(items);
        }

        private void checkDepth(int depth) {
            if (depth > MAX_DEPTH) {
                throw new MalformedJsonException(pos,
                        "arrays and objects must nest at most " + MAX_DEPTH + " deep, but was " + depth);
            }
        }

        private Node literal(String word, Raw node) {
            for (int i = 0; i < word.length(); i++) {
                if (pos >= in.length || in[pos] != word.charAt(i)) {
                    throw error("expected '" + word + "'");
                }
                pos++;
            }
            return node;
        }

        private String string() {
            pos++;
            chars.setLength(0);
            while (true) {
                if (pos >= in.length) {
                    throw error("expected '\"' to end the string");
                }
                int b = in[pos] & 0xFF;
                if (b == '"') {
                    pos++;
                    return chars.toString();
                } else if (b == '\\') {
                    escape();
                } else if (b < 0x20) {
                    throw error("expected an escape for a control character in a string");
                } else if (b < 0x80) {
                    chars.append((char) b);
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
                case '"' -> chars.append('"');
                case '\\' -> chars.append('\\');
                case '/' -> chars.append('/');
                case 'b' -> chars.append('\b');
                case 'f' -> chars.append('\f');
                case 'n' -> chars.append('\n');
                case 'r' -> chars.append('\r');
                case 't' -> chars.append('\t');
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
                        chars.append(unit).append(low);
                    } else {
                        chars.append(unit);
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
            int codePoint;
            int min = 0x80;
            int max = 0xBF;
            if (lead >= 0xC2 && lead <= 0xDF) {
                continuations = 1;
                codePoint = lead & 0x1F;
            } else if (lead >= 0xE0 && lead <= 0xEF) {
                continuations = 2;
                codePoint = lead & 0x0F;
                min = lead == 0xE0 ? 0xA0 : 0x80;
                max = lead == 0xED ? 0x9F : 0xBF;
            } else if (lead >= 0xF0 && lead <= 0xF4) {
                continuations = 3;
                codePoint = lead & 0x07;
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
                codePoint = (codePoint << 6) | (b & 0x3F);
                min = 0x80;
                max = 0xBF;
            }
            pos += continuations + 1;
            chars.appendCodePoint(codePoint);
        }

        private Node number() {
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
            return Numbers.canonical(in, negative, intStart, intEnd, fracStart, fracEnd, expNegative, expStart, pos);
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

        static Raw canonical(byte[] in, boolean negative, int intStart, int intEnd, int fracStart, int fracEnd,
                boolean expNegative, int expStart, int expEnd) {
            // The value is digits(int + frac) * 10^(exponent - fracLength).
            StringBuilder all = new StringBuilder((intEnd - intStart) + (fracEnd - fracStart));
            for (int i = intStart; i < intEnd; i++) {
                all.append((char) in[i]);
            }
            for (int i = fracStart; i < fracEnd; i++) {
                all.append((char) in[i]);
            }
            int first = 0;
            while (first < all.length() && all.charAt(first) == '0') {
                first++;
            }
            if (first == all.length()) {
                return ZERO;
            }
            int last = all.length();
            while (all.charAt(last - 1) == '0') {
                last--;
            }
            String digits = all.substring(first, last);
            // value = digits * 10^(exponent + shift)
            long shift = (long) (all.length() - last) - (fracEnd - fracStart);
            int expFirst = expStart;
            while (expFirst < expEnd && in[expFirst] == '0') {
                expFirst++;
            }
            StringBuilder out = new StringBuilder(digits.length() + 24);
            if (negative) {
                out.append('-');
            }
            if (expEnd - expFirst > LONG_EXPONENT_DIGITS) {
                // |exponent| >= 10^18 dwarfs shift and the digit count (< 2^31 each): always the exponent form.
                long delta = shift + digits.length() - 1;
                return new Raw(scientific(out, digits, addToExponent(in, expFirst, expEnd, expNegative, delta)));
            }
            long exponent = 0;
            for (int i = expFirst; i < expEnd; i++) {
                exponent = exponent * 10 + (in[i] - '0');
            }
            long e = (expNegative ? -exponent : exponent) + shift;
            long k = e + digits.length() - 1; // the power of ten of the first digit
            if (e >= 0 && e <= 20) {
                out.append(digits);
                out.append("0".repeat((int) e));
            } else if (e < 0 && k >= 0) {
                out.append(digits, 0, (int) k + 1).append('.').append(digits, (int) k + 1, digits.length());
            } else if (e < 0 && k >= -6) {
                out.append("0.").append("0".repeat((int) (-k - 1))).append(digits);
            } else {
                return new Raw(scientific(out, digits, Long.toString(k)));
            }
            return new Raw(out.toString());
        }

        private static String scientific(StringBuilder out, String digits, String exponent) {
            out.append(digits.charAt(0));
            if (digits.length() > 1) {
                out.append('.').append(digits, 1, digits.length());
            }
            return out.append('e').append(exponent).toString();
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
