package io.retrysafe;

import io.retrysafe.internal.CanonicalJson;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * JSON values as the test sees them, independent of {@link CanonicalJson}: generated at random,
 * compared by meaning (numbers by exact value, members in any order), and written out in any of the
 * spellings RFC 8259 allows for the same value.
 */
sealed interface JsonModel {

    record Null() implements JsonModel {
    }

    record Bool(boolean value) implements JsonModel {
    }

    record Num(BigDecimal value) implements JsonModel {
    }

    record Str(String value) implements JsonModel {
    }

    record Arr(List<JsonModel> items) implements JsonModel {
    }

    /** Members in insertion order; names unique. */
    record Obj(Map<String, JsonModel> members) implements JsonModel {
    }

    // ---- generation

    /** Numbers from a small pool, so that equal values spelled differently come up often. */
    BigDecimal[] NUMBERS = {BigDecimal.ZERO, BigDecimal.ONE, BigDecimal.TEN, new BigDecimal("-1"), new BigDecimal("0.1"),
        new BigDecimal("12.5"), new BigDecimal("1E+21"), new BigDecimal("1E-7"), new BigDecimal("123456789012345678901234567890"),
        new BigDecimal("0.30000000000000004"), new BigDecimal("0.3")};

    static JsonModel any(SplittableRandom r, int depth) {
        int kinds = depth <= 0 ? 4 : 6;
        return switch (r.nextInt(kinds)) {
            case 0 -> r.nextInt(3) == 0 ? new Null() : new Bool(r.nextBoolean());
            case 1 -> new Num(number(r));
            case 2, 3 -> new Str(string(r, r.nextInt(12)));
            case 4 -> {
                List<JsonModel> items = new ArrayList<>();
                int n = r.nextInt(5);
                for (int i = 0; i < n; i++) {
                    items.add(any(r, depth - 1));
                }
                yield new Arr(items);
            }
            default -> object(r, depth);
        };
    }

    static Obj object(SplittableRandom r, int depth) {
        Map<String, JsonModel> members = new LinkedHashMap<>();
        int n = r.nextInt(6);
        for (int i = 0; i < n; i++) {
            members.put(r.nextInt(3) == 0 ? string(r, r.nextInt(6)) : Generated.oneOf(r, "a", "b", "amount", "a/b", "m~n", ""),
                    any(r, depth - 1));
        }
        return new Obj(members);
    }

    static BigDecimal number(SplittableRandom r) {
        if (r.nextBoolean()) {
            return NUMBERS[r.nextInt(NUMBERS.length)];
        }
        BigDecimal v = BigDecimal.valueOf(r.nextLong(-1_000_000, 1_000_000), r.nextInt(-30, 30));
        return v;
    }

    /** Any Unicode text without unpaired surrogates: what a JSON string can hold. */
    static String string(SplittableRandom r, int length) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < length; i++) {
            int cp = switch (r.nextInt(6)) {
                case 0, 1 -> r.nextInt(0x20, 0x7f);
                case 2 -> Generated.oneOf(r, (int) '"', (int) '\\', (int) '/', 0, 8, 9, 10, 12, 13, 0x1f, 0x7f);
                case 3 -> r.nextInt(0x80, 0x800);
                case 4 -> r.nextInt(0x800, 0xD800);
                default -> r.nextInt(0x10000, 0x110000);
            };
            s.appendCodePoint(cp);
        }
        return s.toString();
    }

    // ---- meaning

    /** Equal as a JSON reader understands them. */
    static boolean same(JsonModel a, JsonModel b) {
        if (a instanceof Num x && b instanceof Num y) {
            return x.value().compareTo(y.value()) == 0;
        }
        if (a instanceof Arr x && b instanceof Arr y) {
            if (x.items().size() != y.items().size()) {
                return false;
            }
            for (int i = 0; i < x.items().size(); i++) {
                if (!same(x.items().get(i), y.items().get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Obj x && b instanceof Obj y) {
            if (!x.members().keySet().equals(y.members().keySet())) {
                return false;
            }
            return x.members().entrySet().stream().allMatch(e -> same(e.getValue(), y.members().get(e.getKey())));
        }
        return a.equals(b);
    }

    // ---- writing

    /** The plainest spelling: members in insertion order, no white space, only the escapes JSON requires. */
    static byte[] plain(JsonModel m) {
        StringBuilder out = new StringBuilder();
        write(m, out, null);
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** A random spelling of the same value: members shuffled, white space, escapes and number forms at random. */
    static byte[] respelled(JsonModel m, SplittableRandom r) {
        StringBuilder out = new StringBuilder();
        space(out, r);
        write(m, out, r);
        space(out, r);
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void write(JsonModel m, StringBuilder out, SplittableRandom r) {
        if (m instanceof Null) {
            out.append("null");
        } else if (m instanceof Bool b) {
            out.append(b.value());
        } else if (m instanceof Num n) {
            out.append(r == null ? n.value().toString().replace("E+", "E") : spell(n.value(), r));
        } else if (m instanceof Str s) {
            string(s.value(), out, r);
        } else if (m instanceof Arr a) {
            out.append('[');
            for (int i = 0; i < a.items().size(); i++) {
                if (i > 0) {
                    separator(',', out, r);
                }
                space(out, r);
                write(a.items().get(i), out, r);
                space(out, r);
            }
            out.append(']');
        } else {
            List<Map.Entry<String, JsonModel>> members = new ArrayList<>(((Obj) m).members().entrySet());
            if (r != null) {
                Collections.shuffle(members, new java.util.Random(r.nextLong()));
            }
            out.append('{');
            for (int i = 0; i < members.size(); i++) {
                if (i > 0) {
                    separator(',', out, r);
                }
                space(out, r);
                string(members.get(i).getKey(), out, r);
                separator(':', out, r);
                write(members.get(i).getValue(), out, r);
                space(out, r);
            }
            out.append('}');
        }
    }

    private static void separator(char c, StringBuilder out, SplittableRandom r) {
        space(out, r);
        out.append(c);
        space(out, r);
    }

    private static void space(StringBuilder out, SplittableRandom r) {
        if (r == null || r.nextInt(3) != 0) {
            return;
        }
        int n = 1 + r.nextInt(3);
        for (int i = 0; i < n; i++) {
            out.append(" \t\n\r".charAt(r.nextInt(4)));
        }
    }

    private static void string(String s, StringBuilder out, SplittableRandom r) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean mustEscape = c == '"' || c == '\\' || c < 0x20;
            if (Character.isHighSurrogate(c)) {
                // A pair is escaped as two \\u escapes, or written as the one character it is.
                if (r != null && r.nextInt(4) == 0) {
                    out.append(String.format("\\u%04x\\u%04X", (int) c, (int) s.charAt(i + 1)));
                } else {
                    out.append(c).append(s.charAt(i + 1));
                }
                i++;
            } else if (r != null && r.nextInt(4) == 0) {
                out.append(String.format(r.nextBoolean() ? "\\u%04x" : "\\u%04X", (int) c));
            } else if (mustEscape || (r != null && c == '/' && r.nextBoolean())) {
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '/' -> out.append("\\/");
                    case '\b' -> out.append("\\b");
                    case '\f' -> out.append("\\f");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> out.append(String.format("\\u%04x", (int) c));
                }
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }

    /**
     * One of the many spellings of {@code v}: trailing zeros in the fraction, the decimal point
     * anywhere with a compensating exponent, {@code e} or {@code E}, a signed or zero-padded exponent,
     * {@code -0} for zero.
     */
    static String spell(BigDecimal v, SplittableRandom r) {
        StringBuilder out = new StringBuilder();
        if (v.signum() < 0 || (v.signum() == 0 && r.nextInt(4) == 0)) {
            out.append('-');
        }
        BigDecimal a = v.abs();
        a = a.setScale(Math.max(a.scale(), 0) + r.nextInt(3));
        String digits = a.unscaledValue().toString();
        long exponent; // value = mantissa * 10^exponent
        if (r.nextInt(3) == 0) {
            int zeros = r.nextInt(4);
            out.append("0.").append("0".repeat(zeros)).append(digits);
            exponent = (long) zeros + digits.length() - a.scale();
        } else {
            int point = 1 + r.nextInt(digits.length());
            out.append(digits, 0, point);
            if (point < digits.length()) {
                out.append('.').append(digits, point, digits.length());
            }
            exponent = (long) (digits.length() - point) - a.scale();
        }
        if (exponent != 0 || r.nextBoolean()) {
            out.append(r.nextBoolean() ? 'e' : 'E');
            if (exponent < 0) {
                out.append('-');
            } else if (r.nextBoolean()) {
                out.append('+');
            }
            out.append("0".repeat(r.nextInt(3))).append(Math.abs(exponent));
        }
        return out.toString();
    }
}
