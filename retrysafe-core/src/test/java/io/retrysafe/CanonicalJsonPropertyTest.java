package io.retrysafe;

import static io.retrysafe.Generated.forAll;
import static io.retrysafe.Generated.length;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.retrysafe.internal.CanonicalJson;
import io.retrysafe.internal.Fingerprinter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link CanonicalJson} on generated JSON: the canonical form depends only on what a JSON reader
 * sees (not on member order, white space, escapes or number spelling), different values never share
 * it, and any other input is a {@link MalformedJsonException}, never another exception.
 */
class CanonicalJsonPropertyTest {
    private static final int TRIES = 1_000;

    private record Pair(JsonModel a, JsonModel b, long seed) {
    }

    @Test
    void theCanonicalFormIgnoresMemberOrderWhiteSpaceEscapesAndNumberSpelling() {
        forAll(TRIES, r -> new Pair(JsonModel.any(r, 4), null, r.nextLong()), p -> {
            byte[] expected = CanonicalJson.canonicalize(JsonModel.plain(p.a()));
            SplittableRandom r = new SplittableRandom(p.seed());
            for (int i = 0; i < 3; i++) {
                byte[] respelled = JsonModel.respelled(p.a(), r);
                assertThat(new String(CanonicalJson.canonicalize(respelled), UTF_8)).as("canonical form of %s",
                        new String(respelled, UTF_8)).isEqualTo(new String(expected, UTF_8));
            }
            assertThat(CanonicalJson.canonicalize(expected)).as("canonical form is a fixpoint").isEqualTo(expected);
        });
    }

    /** Pairs of values that differ by one leaf, often by a leaf of the same value: equal bytes exactly when equal values. */
    @Test
    void twoValuesHaveOneCanonicalFormExactlyWhenTheyAreEqual() {
        forAll(TRIES, r -> {
            JsonModel a = JsonModel.any(r, 3);
            return new Pair(a, r.nextInt(4) == 0 ? JsonModel.any(r, 3) : mutate(a, r), r.nextLong());
        }, p -> {
            SplittableRandom r = new SplittableRandom(p.seed());
            byte[] a = CanonicalJson.canonicalize(JsonModel.respelled(p.a(), r));
            byte[] b = CanonicalJson.canonicalize(JsonModel.respelled(p.b(), r));
            assertThat(Arrays.equals(a, b)).as("%s vs %s", new String(a, UTF_8), new String(b, UTF_8))
                    .isEqualTo(JsonModel.same(p.a(), p.b()));
            Fingerprinter json = Fingerprinter.canonicalJson();
            assertThat(json.fingerprint("POST", "/p", "application/json", JsonModel.respelled(p.a(), r))
                    .equals(json.fingerprint("POST", "/p", "application/json; charset=utf-8", JsonModel.respelled(p.b(), r))))
                    .as("fingerprints").isEqualTo(JsonModel.same(p.a(), p.b()));
        });
    }

    /** BigDecimal is the oracle: one canonical spelling per exact value, and it reads back as that value. */
    @Test
    void aNumberIsCanonicalByItsExactValue() {
        forAll(TRIES * 5, r -> new Pair(new JsonModel.Num(JsonModel.number(r)), new JsonModel.Num(JsonModel.number(r)),
                r.nextLong()), p -> {
            SplittableRandom r = new SplittableRandom(p.seed());
            BigDecimal x = ((JsonModel.Num) p.a()).value();
            BigDecimal y = ((JsonModel.Num) p.b()).value();
            String cx = new String(CanonicalJson.canonicalize(JsonModel.spell(x, r).getBytes(UTF_8)), UTF_8);
            String cy = new String(CanonicalJson.canonicalize(JsonModel.spell(y, r).getBytes(UTF_8)), UTF_8);
            assertThat(new BigDecimal(cx)).isEqualByComparingTo(x);
            assertThat(cx.equals(cy)).as("%s vs %s", cx, cy).isEqualTo(x.compareTo(y) == 0);
            assertThat(cx).as("no sign, zero, point or exponent that says nothing").doesNotContain("+").isNotEqualTo("-0")
                    .doesNotMatch("-?0[0-9].*").doesNotContain("E").doesNotEndWith(".0");
        });
    }

    /**
     * Exponents beyond a long (and BigDecimal): moving the point by one digit and adjusting the
     * exponent gives the same number, through every carry and borrow of the exponent's digits.
     */
    @Test
    void aHugeExponentIsExactAcrossCarries() {
        forAll(TRIES, r -> {
            int digits = 19 + r.nextInt(40);
            BigInteger e = switch (r.nextInt(3)) {
                case 0 -> BigInteger.TEN.pow(digits - 1);                         // 1000…0: a borrow through every digit
                case 1 -> BigInteger.TEN.pow(digits).subtract(BigInteger.ONE);    // 999…9: a carry through every digit
                default -> new BigInteger(digits * 3, new java.util.Random(r.nextLong())).add(BigInteger.TEN.pow(18));
            };
            return (r.nextBoolean() ? "-" : "") + e;
        }, exponent -> {
            BigInteger e = new BigInteger(exponent);
            String expected = "1.5e" + e.add(BigInteger.ONE);
            assertThat(canonical("1.5e" + e.add(BigInteger.ONE))).isEqualTo(expected);
            assertThat(canonical("15e" + e)).isEqualTo(expected);
            assertThat(canonical("15000e" + e.subtract(BigInteger.valueOf(3)))).isEqualTo(expected);
            assertThat(canonical("0.015e" + e.add(BigInteger.valueOf(3)))).isEqualTo(expected);
            BigInteger e5 = e.add(BigInteger.valueOf(5));
            assertThat(canonical("-0.00015E" + (e5.signum() < 0 ? "" : "+") + e5)).isEqualTo("-" + expected);
        });
    }

    /** Digits by the hundred thousand: exact, and in time linear in their number (BigDecimal's parsing is not). */
    @Test
    void aNumberOfManyDigitsIsExact() {
        forAll(20, r -> {
            StringBuilder digits = new StringBuilder().append((char) ('1' + r.nextInt(9)));
            int n = r.nextInt(300_000);
            for (int i = 0; i < n; i++) {
                digits.append((char) ('0' + r.nextInt(10)));
            }
            return digits.append("0".repeat(r.nextInt(30))).toString();
        }, digits -> {
            String trimmed = digits.replaceAll("0+$", "");
            String expected = trimmed.charAt(0) + (trimmed.length() > 1 ? "." + trimmed.substring(1) : "");
            assertThat(canonical(digits + "e-" + (digits.length() - 1))).isEqualTo(expected);
            assertThat(canonical("0." + digits + "0000e1")).isEqualTo(expected);
            assertThat(canonical("-" + trimmed + "e-" + (trimmed.length() - 1))).isEqualTo("-" + expected);
        });
    }

    /** Any Unicode text, escaped as \\u or written as UTF-8, is the same string. */
    @Test
    void aStringIsTheSameEscapedOrLiteral() {
        forAll(TRIES, r -> JsonModel.string(r, length(r, 40)), s -> {
            StringBuilder escaped = new StringBuilder("\"");
            s.chars().forEach(c -> escaped.append(String.format("\\u%04x", c)));
            byte[] fromEscapes = CanonicalJson.canonicalize(escaped.append('"').toString().getBytes(UTF_8));
            byte[] fromLiteral = CanonicalJson.canonicalize(JsonModel.plain(new JsonModel.Str(s)));
            assertThat(fromEscapes).isEqualTo(fromLiteral);
            assertThat(new String(fromLiteral, UTF_8)).as("only quote, backslash and control characters escaped")
                    .isEqualTo(documentedEscaping(s));
        });
    }

    @Test
    void anUnpairedSurrogateEscapeIsMalformed() {
        forAll(TRIES, r -> {
            String before = JsonModel.string(r, length(r, 10));
            char lone = (char) r.nextInt(0xD800, 0xE000);
            String after = r.nextBoolean() ? "" : String.format("\\u%04x", r.nextInt(0xE000, 0x10000));
            return "\"" + before.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("[\\x00-\\x1f]", " ")
                    + String.format("\\u%04x", (int) lone) + after + "\"";
        }, json -> assertThat(catchThrowable(() -> CanonicalJson.canonicalize(json.getBytes(UTF_8))))
                .isInstanceOf(MalformedJsonException.class));
    }

    // ---- bad input

    /** Random bytes, and valid JSON with bytes cut, inserted or flipped: a value or MalformedJsonException, nothing else. */
    @Test
    void anyBytesAreCanonicalOrMalformedJson() {
        forAll(TRIES * 5, r -> r.nextInt(4) == 0 ? Generated.bytes(r, length(r, 200)) : damaged(r), bytes -> {
            assertCanonicalOrMalformed(bytes, () -> CanonicalJson.canonicalize(bytes));
            assertCanonicalOrMalformed(bytes, () -> CanonicalJson.canonicalize(bytes, List.of("/a", "/b/0", "")));
        });
    }

    /** Errors may be logged and returned as they are: they never carry the body's content. */
    @Test
    void aMalformedJsonMessageNeverRepeatsTheBody() {
        forAll(TRIES, r -> {
            String secret = HexFormat.of().formatHex(Generated.bytes(r, 12));
            byte[] valid = ("{\"iban\":\"" + secret + "\",\"n\":" + secret.replaceAll("[a-f]", "7") + "}").getBytes(UTF_8);
            return new Object[] {secret, damage(valid, r)};
        }, c -> {
            String secret = (String) c[0];
            byte[] json = (byte[]) c[1];
            Throwable thrown = catchThrowable(() -> CanonicalJson.canonicalize(json));
            if (thrown != null) {
                assertThat(thrown).isInstanceOf(MalformedJsonException.class);
                assertThat(thrown.getMessage()).doesNotContain(secret.substring(0, 4))
                        .doesNotContain(secret.replaceAll("[a-f]", "7").substring(0, 4));
            }
        });
    }

    /** Nesting of any depth: up to MAX_DEPTH it is JSON, deeper it is MalformedJsonException; never a StackOverflowError. */
    @Test
    void anyNestingDepthIsCanonicalOrMalformedNeverAStackOverflow() {
        forAll(300, r -> {
            int depth = r.nextBoolean() ? CanonicalJson.MAX_DEPTH - 2 + r.nextInt(5) : 1 + r.nextInt(200_000);
            StringBuilder open = new StringBuilder();
            StringBuilder close = new StringBuilder();
            for (int i = 0; i < depth; i++) {
                if (r.nextBoolean()) {
                    open.append('[');
                    close.append(']');
                } else {
                    open.append("{\"a\":");
                    close.append('}');
                }
            }
            boolean closed = r.nextInt(4) != 0;
            return new Object[] {depth, closed, (open + "1" + (closed ? close.reverse() : "")).getBytes(UTF_8)};
        }, c -> {
            int depth = (int) c[0];
            boolean closed = (boolean) c[1];
            byte[] json = (byte[]) c[2];
            for (List<String> pointers : List.of(List.<String>of(), List.of("/a/a", "/0/0"))) {
                Throwable thrown = catchThrowable(() -> {
                    if (pointers.isEmpty()) {
                        CanonicalJson.canonicalize(json);
                    } else {
                        CanonicalJson.canonicalize(json, pointers);
                    }
                });
                if (depth <= CanonicalJson.MAX_DEPTH && closed) {
                    assertThat(thrown).as("depth %d", depth).isNull();
                } else {
                    assertThat(thrown).as("depth %d", depth).isInstanceOf(MalformedJsonException.class);
                    if (depth > CanonicalJson.MAX_DEPTH) {
                        assertThat(thrown).hasMessageContaining("nest at most " + CanonicalJson.MAX_DEPTH);
                    }
                }
            }
        });
    }

    // ---- selected members

    private record Selection(JsonModel.Obj document, List<String> pointers, List<String> selectedNames, long seed) {
    }

    /** Only the selected members count: changing any other one changes nothing, changing a selected one changes the form. */
    @Test
    void selectedMembersAloneDecideTheCanonicalForm() {
        forAll(TRIES, r -> {
            JsonModel.Obj doc = JsonModel.object(r, 3);
            List<String> names = new ArrayList<>(doc.members().keySet());
            List<String> selected = new ArrayList<>();
            for (String name : names) {
                if (r.nextBoolean()) {
                    selected.add(name);
                }
            }
            List<String> pointers = new ArrayList<>(selected.stream().map(CanonicalJsonPropertyTest::pointer).toList());
            pointers.add("/absent~1member");
            return new Selection(doc, pointers, selected, r.nextLong());
        }, s -> {
            SplittableRandom r = new SplittableRandom(s.seed());
            byte[] base = CanonicalJson.canonicalize(JsonModel.respelled(s.document(), r), s.pointers());
            assertThat(CanonicalJson.canonicalize(JsonModel.respelled(s.document(), r), s.pointers()))
                    .as("respelled").isEqualTo(base);
            for (String name : s.document().members().keySet()) {
                Map<String, JsonModel> changed = new LinkedHashMap<>(s.document().members());
                JsonModel other = differentFrom(changed.get(name), r);
                changed.put(name, other);
                byte[] after = CanonicalJson.canonicalize(JsonModel.respelled(new JsonModel.Obj(changed), r), s.pointers());
                assertThat(Arrays.equals(after, base)).as("after changing member \"%s\" (selected: %s)", name,
                        s.selectedNames()).isEqualTo(!s.selectedNames().contains(name));
            }
        });
    }

    // ---- helpers

    private static String canonical(String json) {
        return new String(CanonicalJson.canonicalize(json.getBytes(UTF_8)), UTF_8);
    }

    /** The string escaping CanonicalJson documents, written out independently. */
    private static String documentedEscaping(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> out.append(c < 0x20 ? String.format("\\u%04x", (int) c) : String.valueOf(c));
            }
        }
        return out.append('"').toString();
    }

    private static String pointer(String name) {
        return "/" + name.replace("~", "~0").replace("/", "~1");
    }

    private static void assertCanonicalOrMalformed(byte[] input, Runnable canonicalize) {
        Throwable thrown = catchThrowable(canonicalize::run);
        if (thrown != null) {
            assertThat(thrown).isInstanceOf(MalformedJsonException.class);
            int offset = ((MalformedJsonException) thrown).offset();
            assertThat(offset).isBetween(0, input.length);
        }
    }

    /** A valid document with a few bytes cut off, inserted or changed. */
    private static byte[] damaged(SplittableRandom r) {
        return damage(JsonModel.respelled(JsonModel.any(r, 3), r), r);
    }

    private static byte[] damage(byte[] json, SplittableRandom r) {
        byte[] out = json;
        int edits = 1 + r.nextInt(3);
        for (int i = 0; i < edits; i++) {
            int at = r.nextInt(out.length + 1);
            switch (r.nextInt(3)) {
                case 0 -> out = Arrays.copyOf(out, at);
                case 1 -> {
                    byte[] longer = new byte[out.length + 1];
                    System.arraycopy(out, 0, longer, 0, at);
                    longer[at] = (byte) (char) Generated.oneOf(r, '{', '}', '[', ']', '"', '\\', ',', ':', '-', '0', 'e', '.',
                            (char) 0xC3, (char) 0xED, (char) 0xF4, (char) 0x80, ' ', 'n');
                    System.arraycopy(out, at, longer, at + 1, out.length - at);
                    out = longer;
                }
                default -> {
                    if (at < out.length) {
                        out = out.clone();
                        out[at] = (byte) r.nextInt(256);
                    }
                }
            }
        }
        return out;
    }

    /** The same value with one leaf replaced, often by an equal one in another spelling. */
    private static JsonModel mutate(JsonModel m, SplittableRandom r) {
        if (m instanceof JsonModel.Arr a && !a.items().isEmpty() && r.nextInt(4) != 0) {
            List<JsonModel> items = new ArrayList<>(a.items());
            int i = r.nextInt(items.size());
            items.set(i, mutate(items.get(i), r));
            return new JsonModel.Arr(items);
        }
        if (m instanceof JsonModel.Obj o && !o.members().isEmpty() && r.nextInt(4) != 0) {
            Map<String, JsonModel> members = new LinkedHashMap<>(o.members());
            String name = new ArrayList<>(members.keySet()).get(r.nextInt(members.size()));
            members.put(name, mutate(members.get(name), r));
            return new JsonModel.Obj(members);
        }
        return r.nextBoolean() ? JsonModel.any(r, 1) : m instanceof JsonModel.Num n
                ? new JsonModel.Num(n.value().setScale(Math.max(n.value().scale(), 0) + 1)) : m;
    }

    private static JsonModel differentFrom(JsonModel m, SplittableRandom r) {
        JsonModel other;
        do {
            other = JsonModel.any(r, 2);
        } while (JsonModel.same(other, m));
        return other;
    }
}
