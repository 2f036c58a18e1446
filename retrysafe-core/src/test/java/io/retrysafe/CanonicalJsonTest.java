package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.params.provider.Arguments.arguments;

import io.retrysafe.internal.CanonicalJson;
import io.retrysafe.internal.Fingerprinter;
import io.retrysafe.internal.Hex;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class CanonicalJsonTest {

    private static String canon(String json) {
        return new String(CanonicalJson.canonicalize(json.getBytes(UTF_8)), UTF_8);
    }

    private static String canon(String json, String... pointers) {
        return new String(CanonicalJson.canonicalize(json.getBytes(UTF_8), List.of(pointers)), UTF_8);
    }

    /** Bytes from hex, for input that is not valid UTF-8 and so cannot be written as a Java string. */
    private static byte[] hex(String hex) {
        return HexFormat.of().parseHex(hex.replace(" ", ""));
    }

    @Nested
    class CanonicalForm {

        static Stream<Arguments> canonicalForms() {
            return Stream.of(
                    arguments("{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}"),
                    arguments(" {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { } } ", "{\"a\":[1,2],\"b\":{}}"),
                    arguments("{\"z\":{\"y\":1,\"x\":[{\"d\":1,\"c\":2}]},\"a\":[]}",
                            "{\"a\":[],\"z\":{\"x\":[{\"c\":2,\"d\":1}],\"y\":1}}"),
                    // RFC 8785 §3.2.3: UTF-16 code units, so U+1F600 (D83D DE00) sorts before U+FB33.
                    arguments("{\"\\ufb33\":1,\"😀\":2,\"€\":3,\"ö\":4,\"\\u0080\":5,\"1\":6,\"\\r\":7}",
                            "{\"\\r\":7,\"1\":6,\"\u0080\":5,\"ö\":4,\"€\":3,\"😀\":2,\"\ufb33\":1}"),
                    arguments("{\"a\":1,\"A\":2,\"aa\":3,\"\":4}", "{\"\":4,\"A\":2,\"a\":1,\"aa\":3}"),
                    arguments("true", "true"),
                    arguments(" false ", "false"),
                    arguments("null", "null"),
                    arguments("[true,false,null]", "[true,false,null]"),
                    arguments("[3,1,2]", "[3,1,2]"),
                    arguments("\"text\"", "\"text\""),
                    arguments("\uFEFF{\"a\":1}", "{\"a\":1}"));
        }

        @ParameterizedTest(name = "{0} -> {1}")
        @MethodSource("canonicalForms")
        void isSortedAndCompact(String json, String expected) {
            assertThat(canon(json)).isEqualTo(expected);
        }

        static Stream<Arguments> numbers() {
            return Stream.of(
                    arguments("1", "1"), arguments("1.0", "1"), arguments("1e0", "1"), arguments("10E-1", "1"),
                    arguments("0.1e1", "1"), arguments("100e-2", "1"), arguments("1E+0", "1"), arguments("1e-0", "1"),
                    arguments("1.000000000000000000000000000000", "1"), arguments("1e000000000000000000000000", "1"),
                    arguments("0", "0"), arguments("-0", "0"), arguments("-0.0", "0"), arguments("0e5", "0"),
                    arguments("-0E-999999999999999999999999", "0"), arguments("0.000", "0"),
                    arguments("100", "100"), arguments("1e2", "100"), arguments("-1.50", "-1.5"),
                    arguments("123.456e1", "1234.56"), arguments("0.5", "0.5"), arguments("5e-1", "0.5"),
                    arguments("0.000001", "0.000001"), arguments("1e-6", "0.000001"), arguments("1e-7", "1e-7"),
                    arguments("0.00000015", "1.5e-7"), arguments("123e-9", "1.23e-7"),
                    arguments("1e20", "100000000000000000000"), arguments("1e21", "1e21"),
                    arguments("12.3e21", "12300000000000000000000"), arguments("12.3e22", "1.23e23"), arguments("1000000000000000000000", "1e21"),
                    arguments("-4.2E+30", "-4.2e30"),
                    // Exact: a double would round these.
                    arguments("9007199254740993", "9007199254740993"),
                    arguments("12345678901234567890123456789", "12345678901234567890123456789"),
                    arguments("0.1000000000000000000000000000001", "0.1000000000000000000000000000001"),
                    arguments("-1e-400", "-1e-400"), arguments("1e400", "1e400"),
                    // Exponents beyond a long, adjusted exactly across the boundary.
                    arguments("1e1000000000000000000", "1e1000000000000000000"),
                    arguments("0.01e1000000000000000000", "1e999999999999999998"),
                    arguments("1e999999999999999998", "1e999999999999999998"),
                    arguments("10e99999999999999999999", "1e100000000000000000000"),
                    arguments("-12.5e-1000000000000000000000", "-1.25e-999999999999999999999"),
                    arguments("12.5e-1000000000000000000000", "1.25e-999999999999999999999"),
                    arguments("1e0000000000000000000000003", "1000"));
        }

        @ParameterizedTest(name = "{0} -> {1}")
        @MethodSource("numbers")
        void numbersHaveOneSpellingPerValue(String number, String expected) {
            assertThat(canon(number)).isEqualTo(expected);
            assertThat(canon("[" + number + "]")).isEqualTo("[" + expected + "]");
        }

        static Stream<Arguments> strings() {
            return Stream.of(
                    arguments("\"\\u00e9\"", "\"é\""),
                    arguments("\"\\u00E9\"", "\"é\""),
                    arguments("\"é\"", "\"é\""),
                    arguments("\"\\u0041\\/\"", "\"A/\""),
                    arguments("\"\\ud83d\\ude00\"", "\"😀\""),
                    arguments("\"\\uD83D\\uDE00\"", "\"😀\""),
                    arguments("\"😀\"", "\"😀\""),
                    arguments("\"\\\"\\\\\"", "\"\\\"\\\\\""),
                    arguments("\"\\u0022\\u005c\"", "\"\\\"\\\\\""),
                    arguments("\"\\u0008\\u000c\\u000a\\u000d\\u0009\"", "\"\\b\\f\\n\\r\\t\""),
                    arguments("\"\\b\\f\\n\\r\\t\"", "\"\\b\\f\\n\\r\\t\""),
                    arguments("\"\\u0000\\u001F\\u001f\"", "\"\\u0000\\u001f\\u001f\""),
                    arguments("\"\\u007f\\u0080\\u2028\"", "\"\u007f\u0080\u2028\""),
                    arguments("\"\\uffff\"", "\"\uffff\""));
        }

        @ParameterizedTest(name = "{0} -> {1}")
        @MethodSource("strings")
        void stringsAreEscapedMinimally(String string, String expected) {
            assertThat(canon(string)).isEqualTo(expected);
        }

        @Test
        void charactersBeyondTheBmpAreWrittenAsFourByteUtf8() {
            byte[] canonical = CanonicalJson.canonicalize("\"\\ud83d\\ude00\"".getBytes(UTF_8));

            assertThat(canonical).containsExactly(hex("22 f0 9f 98 80 22"));
        }

        @Test
        void theInputIsNotModified() {
            byte[] input = "{\"b\":1,\"a\":2}".getBytes(UTF_8);

            CanonicalJson.canonicalize(input);

            assertThat(new String(input, UTF_8)).isEqualTo("{\"b\":1,\"a\":2}");
        }
    }

    @Nested
    class Differences {

        static Stream<Arguments> differentValues() {
            return Stream.of(
                    arguments("\"1\"", "1"),
                    arguments("null", "\"null\""),
                    arguments("true", "\"true\""),
                    arguments("[1,2]", "[2,1]"),
                    arguments("[{\"a\":1},{\"b\":1}]", "[{\"b\":1},{\"a\":1}]"),
                    arguments("{\"a\":null}", "{}"),
                    arguments("[]", "{}"),
                    arguments("[[]]", "[]"),
                    arguments("[]", "[null]"),
                    arguments("\"a\"", "\"A\""),
                    arguments("\"\"", "null"),
                    arguments("0", "false"),
                    arguments("0", "-1e-400"),
                    arguments("1", "1.0000000000000000000000001"),
                    arguments("9007199254740993", "9007199254740992"),
                    arguments("1e999999999999999998", "1e999999999999999999"),
                    arguments("{\"a\":1}", "{\"a \":1}"),
                    arguments("\"e\\u0301\"", "\"é\""));
        }

        @ParameterizedTest(name = "{0} != {1}")
        @MethodSource("differentValues")
        void differentValuesHaveDifferentCanonicalForms(String a, String b) {
            assertThat(canon(a)).isNotEqualTo(canon(b));
        }
    }

    @Nested
    class Malformed {

        static Stream<Arguments> malformed() {
            return Stream.of(
                    arguments("", 0, "expected a value, but was the end of input"),
                    arguments("   ", 3, "expected a value, but was the end of input"),
                    arguments("{\"a\":1} x", 8, "expected the end of input after the value, but was 'x'"),
                    arguments("{\"a\":1}{}", 7, "expected the end of input after the value, but was '{'"),
                    arguments("[1]]", 3, "expected the end of input after the value, but was ']'"),
                    arguments("{\"a\" 1}", 5, "expected ':' after a member name, but was '1'"),
                    arguments("{\"amount\":100,\"currency\" \"EUR\"}", 25, "expected ':' after a member name, but was '\"'"),
                    arguments("{\"a\":1,}", 7, "expected a member name, but was '}'"),
                    arguments("{a:1}", 1, "expected a member name or '}', but was 'a'"),
                    arguments("{'a':1}", 1, "expected a member name or '}', but was '''"),
                    arguments("{\"a\":1 \"b\":2}", 7, "expected ',' or '}' after a member value, but was '\"'"),
                    arguments("{\"a\":1", 6, "expected ',' or '}' after a member value, but was the end of input"),
                    arguments("[1,]", 3, "expected a value, but was ']'"),
                    arguments("[1 2]", 3, "expected ',' or ']' after an array element, but was '2'"),
                    arguments("[", 1, "expected a value, but was the end of input"),
                    arguments("{\"a\":1,\"a\":2}", 7, "duplicate member name"),
                    arguments("{\"a\":1,\"\\u0061\":2}", 7, "duplicate member name"),
                    arguments("[{\"x\":{\"k\":1,\"k\":1}}]", 13, "duplicate member name"),
                    arguments("01", 1, "expected '.', 'e' or the end of the number after a leading 0, but was '1'"),
                    arguments("-01", 2, "after a leading 0"),
                    arguments("-", 1, "expected a digit after '-', but was the end of input"),
                    arguments("-a", 1, "expected a digit after '-', but was 'a'"),
                    arguments("1.", 2, "expected a digit after the decimal point, but was the end of input"),
                    arguments("1.e5", 2, "expected a digit after the decimal point, but was 'e'"),
                    arguments(".5", 0, "expected a value, but was '.'"),
                    arguments("+1", 0, "expected a value, but was '+'"),
                    arguments("1e", 2, "expected a digit in the exponent, but was the end of input"),
                    arguments("1e+", 3, "expected a digit in the exponent, but was the end of input"),
                    arguments("1e+-1", 3, "expected a digit in the exponent, but was '-'"),
                    arguments("0x1F", 1, "expected the end of input after the value, but was 'x'"),
                    arguments("NaN", 0, "expected a value, but was 'N'"),
                    arguments("Infinity", 0, "expected a value, but was 'I'"),
                    arguments("-Infinity", 1, "expected a digit after '-', but was 'I'"),
                    arguments("nul", 3, "expected 'null', but was the end of input"),
                    arguments("tru e", 3, "expected 'true', but was byte 0x20"),
                    arguments("True", 0, "expected a value, but was 'T'"),
                    arguments("nullx", 4, "expected the end of input after the value, but was 'x'"),
                    arguments("\"abc", 4, "expected '\"' to end the string, but was the end of input"),
                    arguments("\"a\tb\"", 2, "expected an escape for a control character in a string, but was byte 0x09"),
                    arguments("\"a\nb\"", 2, "but was byte 0x0a"),
                    arguments("\"\\x\"", 2, "expected one of \" \\ / b f n r t u after '\\', but was 'x'"),
                    arguments("\"\\", 2, "but was the end of input"),
                    arguments("\"\\u12G4\"", 5, "expected 4 hex digits after \\u, but was 'G'"),
                    arguments("\"\\u12\"", 5, "expected 4 hex digits after \\u, but was '\"'"),
                    arguments("\"\\ud83d\"", 7, "expected a \\u escape of a low surrogate after the high surrogate \\ud83d, but was '\"'"),
                    arguments("\"\\ud83dx\"", 7, "low surrogate after the high surrogate \\ud83d, but was 'x'"),
                    arguments("\"\\ud83d\\u0041\"", 7, "low surrogate after the high surrogate \\ud83d, but was \\u0041"),
                    arguments("\"\\ud83d\\ud83d\"", 7, "but was \\ud83d"),
                    arguments("\"\\ude00\"", 1, "expected a high surrogate before the low surrogate \\ude00, but was none"),
                    arguments("\"\\ude00\\ud83d\"", 1, "before the low surrogate \\ude00"),
                    arguments("// comment\n1", 0, "expected a value, but was '/'"),
                    arguments("\u00a01", 0, "expected a value, but was byte 0xc2"),
                    arguments("\uFEFF\uFEFF1", 3, "expected a value, but was byte 0xef"));
        }

        @ParameterizedTest(name = "{0} -> offset {1}: {2}")
        @MethodSource("malformed")
        void isRefusedWithTheOffsetAndWhatWasExpected(String json, int offset, String reason) {
            assertThatThrownBy(() -> CanonicalJson.canonicalize(json.getBytes(UTF_8)))
                    .isInstanceOf(MalformedJsonException.class)
                    .isInstanceOf(RetrySafeException.class)
                    .hasMessageStartingWith("malformed JSON at offset " + offset + ": ")
                    .hasMessageContaining(reason)
                    .satisfies(e -> assertThat(((MalformedJsonException) e).offset()).isEqualTo(offset))
                    .satisfies(e -> assertThat(((MalformedJsonException) e).reason()).contains(reason));
        }

        static Stream<Arguments> invalidUtf8() {
            return Stream.of(
                    arguments("22 c0 80 22", 1, "expected UTF-8, but was byte 0xc0, which cannot start a character"),
                    arguments("22 c1 bf 22", 1, "but was byte 0xc1"),
                    arguments("22 80 22", 1, "but was byte 0x80"),
                    arguments("22 ff 22", 1, "but was byte 0xff"),
                    arguments("22 f5 80 80 80 22", 1, "but was byte 0xf5"),
                    arguments("22 e0 80 80 22", 2, "expected a UTF-8 continuation byte in 0xa0..0xbf after lead byte 0xe0, but was byte 0x80"),
                    arguments("22 ed a0 80 22", 2, "in 0x80..0x9f after lead byte 0xed, but was byte 0xa0"),
                    arguments("22 f0 8f bf bf 22", 2, "in 0x90..0xbf after lead byte 0xf0"),
                    arguments("22 f4 90 80 80 22", 2, "in 0x80..0x8f after lead byte 0xf4, but was byte 0x90"),
                    arguments("22 c3 22", 2, "in 0x80..0xbf after lead byte 0xc3, but was '\"'"),
                    arguments("22 e2 82", 3, "after lead byte 0xe2, but was the end of input"),
                    arguments("22 e2 82 41 22", 3, "but was 'A'"),
                    arguments("7b 22 61 22 3a 31 2c 22 c3 28 22 3a 32 7d", 9, "after lead byte 0xc3, but was '('"),
                    arguments("c3 a9", 0, "expected a value, but was byte 0xc3"));
        }

        @ParameterizedTest(name = "{0} -> offset {1}: {2}")
        @MethodSource("invalidUtf8")
        void invalidUtf8IsRefused(String bytes, int offset, String reason) {
            assertThatThrownBy(() -> CanonicalJson.canonicalize(hex(bytes)))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessageStartingWith("malformed JSON at offset " + offset + ": ")
                    .hasMessageContaining(reason);
        }

        @Test
        void validUtf8AtTheEdgesOfEachRangeIsAccepted() {
            // U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+FFFF, U+10000, U+10FFFF
            byte[] edges = hex("22 c2 80 df bf e0 a0 80 ed 9f bf ee 80 80 ef bf bf f0 90 80 80 f4 8f bf bf 22");

            assertThat(CanonicalJson.canonicalize(edges)).containsExactly(edges);
        }

        @Test
        void theMessageDoesNotQuoteTheBody() {
            assertThatThrownBy(() -> canon("{\"iban\":\"DE89370400440532013000\",\"iban\":\"x\"}"))
                    .isInstanceOf(MalformedJsonException.class)
                    .message()
                    .doesNotContain("iban")
                    .doesNotContain("DE89");
        }

        @Test
        void nullIsRefused() {
            assertThatThrownBy(() -> CanonicalJson.canonicalize(null))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessage("utf8Json must not be null");
        }
    }

    @Nested
    class Depth {

        private String nestedArrays(int depth) {
            return "[".repeat(depth) + "]".repeat(depth);
        }

        private String nestedObjects(int depth) {
            return "{\"a\":".repeat(depth - 1) + "{}" + "}".repeat(depth - 1);
        }

        @Test
        void nestingUpToTheLimitIsAccepted() {
            assertThat(CanonicalJson.MAX_DEPTH).isEqualTo(128);
            assertThat(canon(nestedArrays(128))).isEqualTo(nestedArrays(128));
            assertThat(canon(nestedObjects(128))).isEqualTo(nestedObjects(128));
        }

        @Test
        void nestingBeyondTheLimitIsRefusedAtTheFirstBracketTooDeep() {
            assertThatThrownBy(() -> canon(nestedArrays(129)))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessage("malformed JSON at offset 128: arrays and objects must nest at most 128 deep, but was 129");
            assertThatThrownBy(() -> canon(nestedObjects(129)))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessage("malformed JSON at offset " + (5 * 128) + ": arrays and objects must nest at most 128 deep, but was 129");
        }

        @Test
        void hugeNestingIsRefusedWithoutOverflowingTheStack() {
            String deep = "[{\"a\":".repeat(500_000);

            assertThatThrownBy(() -> canon(deep))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessageContaining("must nest at most 128 deep");
            assertThatThrownBy(() -> canon(deep, "/0/a"))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessageContaining("must nest at most 128 deep");
        }

        @Test
        void longFlatInputIsNotLimited() {
            String wide = "[" + "1,".repeat(200_000) + "1]";
            String longString = "\"" + "é".repeat(200_000) + "\"";

            assertThat(canon(wide)).isEqualTo(wide);
            assertThat(canon(longString)).isEqualTo(longString);
        }
    }

    @Nested
    class Pointers {
        private static final String DOCUMENT = """
                {"amount": 100, "currency": "EUR", "payer": {"name": "A", "iban": "DE89"},
                 "a/b": 1, "m~n": 2, "items": [{"sku": "x"}, {"sku": "y"}], "note": null, "": "empty",
                 "requestedAt": "2024-06-01T10:00:00Z"}
                """;

        static Stream<Arguments> selections() {
            return Stream.of(
                    arguments(List.of("/amount"), "{\"/amount\":100}"),
                    arguments(List.of("/payer/iban", "/amount"), "{\"/amount\":100,\"/payer/iban\":\"DE89\"}"),
                    arguments(List.of("/payer"), "{\"/payer\":{\"iban\":\"DE89\",\"name\":\"A\"}}"),
                    arguments(List.of("/a~1b"), "{\"/a~1b\":1}"),
                    arguments(List.of("/m~0n"), "{\"/m~0n\":2}"),
                    arguments(List.of("/items/1/sku"), "{\"/items/1/sku\":\"y\"}"),
                    arguments(List.of("/items/0"), "{\"/items/0\":{\"sku\":\"x\"}}"),
                    arguments(List.of("/note"), "{\"/note\":null}"),
                    arguments(List.of("/"), "{\"/\":\"empty\"}"),
                    // absent: left out, so that it differs from null
                    arguments(List.of("/missing"), "{}"),
                    arguments(List.of("/items/2"), "{}"),
                    arguments(List.of("/items/-"), "{}"),
                    arguments(List.of("/items/01"), "{}"),
                    arguments(List.of("/items/x"), "{}"),
                    arguments(List.of("/items/99999999999"), "{}"),
                    arguments(List.of("/amount/0"), "{}"),
                    arguments(List.of("/a/b"), "{}"),
                    arguments(List.of("/Amount"), "{}"),
                    arguments(List.of("/amount", "/missing", "/note"), "{\"/amount\":100,\"/note\":null}"));
        }

        @ParameterizedTest(name = "{0} -> {1}")
        @MethodSource("selections")
        void selectOnlyTheNamedMembers(List<String> pointers, String expected) {
            assertThat(new String(CanonicalJson.canonicalize(DOCUMENT.getBytes(UTF_8), pointers), UTF_8))
                    .isEqualTo(expected);
        }

        @Test
        void theEmptyPointerSelectsTheWholeDocument() {
            assertThat(canon(DOCUMENT, "")).isEqualTo("{\"\":" + canon(DOCUMENT) + "}");
        }

        @Test
        void pointersAreMatchedAgainstUnescapedNames() {
            assertThat(canon("{\"\\u00e9\":1,\"😀\":2}", "/é", "/😀")).isEqualTo("{\"/é\":1,\"/😀\":2}");
            assertThat(canon("{\"~1\":1}", "/~01")).isEqualTo("{\"/~01\":1}");
        }

        @Test
        void unselectedMembersDoNotMatter() {
            assertThat(canon("{\"amount\":100,\"requestedAt\":\"10:00\"}", "/amount"))
                    .isEqualTo(canon("{\"requestedAt\":\"10:01\",\"amount\":1e2}", "/amount"));
        }

        @Test
        void absentDiffersFromNull() {
            assertThat(canon("{\"note\":null}", "/note")).isNotEqualTo(canon("{}", "/note"));
            assertThat(canon("[null]", "/0")).isNotEqualTo(canon("[]", "/0"));
        }

        @Test
        void theWholeDocumentMustStillBeJson() {
            assertThatThrownBy(() -> canon("{\"amount\":100,\"other\":01}", "/amount"))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessageStartingWith("malformed JSON at offset 23: ");
        }

        static Stream<Arguments> malformedPointers() {
            return Stream.of(
                    arguments(List.of("amount"), "a JSON Pointer must be empty or start with '/', but was \"amount\""),
                    arguments(List.of("#/amount"), "a JSON Pointer must be empty or start with '/', but was \"#/amount\""),
                    arguments(List.of("/a~2b"), "in a JSON Pointer '~' must be followed by '0' or '1', but was \"/a~2b\""),
                    arguments(List.of("/a~"), "in a JSON Pointer '~' must be followed by '0' or '1', but was \"/a~\""),
                    arguments(List.of("/a", "/b~"), "but was \"/b~\""),
                    arguments(List.of("/\uD800"), "a JSON Pointer must not contain an unpaired surrogate, but was"),
                    arguments(List.of("/amount", "/amount"),
                            "jsonPointers must not contain a pointer twice, but was \"/amount\" twice"),
                    arguments(List.of(), "jsonPointers must name at least one member, but was []"));
        }

        @ParameterizedTest(name = "{0} -> {1}")
        @MethodSource("malformedPointers")
        void malformedPointersAreRefused(List<String> pointers, String message) {
            assertThatThrownBy(() -> CanonicalJson.canonicalize("{}".getBytes(UTF_8), pointers))
                    .isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(message);
            assertThatThrownBy(() -> Fingerprinter.canonicalJson(pointers))
                    .as("refused when the fingerprinter is built, not per request")
                    .isExactlyInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(message);
        }

        @Test
        void nullPointersAreRefused() {
            assertThatThrownBy(() -> Fingerprinter.canonicalJson(null))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessage("jsonPointers must not be null");
            assertThatThrownBy(() -> Fingerprinter.canonicalJson(Arrays.asList("/a", null)))
                    .isInstanceOf(NullPointerException.class)
                    .hasMessage("jsonPointers[1] must not be null");
        }
    }

    @Nested
    class Fingerprints {
        private static final Fingerprinter CANONICAL = Fingerprinter.canonicalJson();
        private static final Fingerprinter STANDARD = Fingerprinter.standard();
        private static final String BODY = "{\"amount\":100,\"currency\":\"EUR\",\"payer\":{\"iban\":\"DE89\",\"name\":\"Zoë\"}}";
        private static final String RESERIALISED = """
                {
                  "payer" : { "name" : "Zo\\u00eb", "iban" : "DE89" },
                  "currency" : "EUR",
                  "amount" : 1.00E2
                }
                """;

        private static Fingerprint fingerprint(Fingerprinter fingerprinter, String contentType, String body) {
            return fingerprinter.fingerprint("POST", "/payments", contentType, body == null ? null : body.getBytes(UTF_8));
        }

        @ParameterizedTest(name = "{0}")
        @ValueSource(strings = {"application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                " Application/Json ;charset=UTF-8", "application/problem+json", "application/merge-patch+json",
                "application/vnd.api+json; ext=bulk"})
        void aReserialisedJsonBodyHasTheSameFingerprint(String contentType) {
            assertThat(fingerprint(CANONICAL, contentType, RESERIALISED)).isEqualTo(fingerprint(CANONICAL, contentType, BODY));
            assertThat(fingerprint(STANDARD, contentType, RESERIALISED))
                    .as("standard() hashes the bytes as they are")
                    .isNotEqualTo(fingerprint(STANDARD, contentType, BODY));
        }

        @Test
        void aDifferentJsonValueHasADifferentFingerprint() {
            assertThat(fingerprint(CANONICAL, "application/json", BODY.replace("100", "\"100\"")))
                    .isNotEqualTo(fingerprint(CANONICAL, "application/json", BODY));
            assertThat(fingerprint(CANONICAL, "application/json", BODY.replace("100", "101")))
                    .isNotEqualTo(fingerprint(CANONICAL, "application/json", BODY));
        }

        @Test
        void methodRouteAndContentTypeStillCount() {
            byte[] body = BODY.getBytes(UTF_8);
            Fingerprint base = CANONICAL.fingerprint("POST", "/payments", "application/json", body);

            assertThat(CANONICAL.fingerprint("PUT", "/payments", "application/json", body)).isNotEqualTo(base);
            assertThat(CANONICAL.fingerprint("POST", "/refunds", "application/json", body)).isNotEqualTo(base);
            assertThat(CANONICAL.fingerprint("POST", "/payments", "application/problem+json", body)).isNotEqualTo(base);
        }

        @Test
        void itIsStandardOverTheCanonicalBody() {
            assertThat(fingerprint(CANONICAL, "application/json", RESERIALISED))
                    .isEqualTo(fingerprint(STANDARD, "application/json", canon(RESERIALISED)));
        }

        @ParameterizedTest(name = "{0}")
        @ValueSource(strings = {"text/plain", "application/x-ndjson", "application/jsonl", "application/json-seq",
                "text/json", "application/octet-stream", "application/+json", "+json", "application/jsonx"})
        void otherMediaTypesAreHashedAsTheyAre(String contentType) {
            assertThat(fingerprint(CANONICAL, contentType, RESERIALISED))
                    .isEqualTo(fingerprint(STANDARD, contentType, RESERIALISED))
                    .isNotEqualTo(fingerprint(CANONICAL, contentType, BODY));
            assertThatCode(() -> fingerprint(CANONICAL, contentType, "not json")).doesNotThrowAnyException();
        }

        @Test
        void aMissingContentTypeOrBodyIsHashedAsByStandard() {
            assertThat(fingerprint(CANONICAL, null, RESERIALISED)).isEqualTo(fingerprint(STANDARD, null, RESERIALISED));
            assertThat(fingerprint(CANONICAL, "application/json", "")).isEqualTo(fingerprint(STANDARD, "application/json", ""));
            assertThat(fingerprint(CANONICAL, "application/json", null)).isEqualTo(fingerprint(STANDARD, "application/json", null));
            assertThat(fingerprint(CANONICAL, "application/json", "")).isNotEqualTo(fingerprint(CANONICAL, "application/json", "{}"));
        }

        @Test
        void aJsonBodyThatDoesNotParseIsRefused() {
            assertThatThrownBy(() -> fingerprint(CANONICAL, "application/json", "{\"amount\" 100}"))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessage("malformed JSON at offset 10: expected ':' after a member name, but was '1'");
            assertThatThrownBy(() -> fingerprint(CANONICAL, "application/json", " "))
                    .isInstanceOf(MalformedJsonException.class)
                    .hasMessage("malformed JSON at offset 1: expected a value, but was the end of input");
            assertThatThrownBy(() -> fingerprint(Fingerprinter.canonicalJson(List.of("/amount")), "application/json",
                    "{\"amount\":1,\"amount\":2}"))
                    .isInstanceOf(MalformedJsonException.class);
        }

        @Test
        void selectedMembersOnly() {
            Fingerprinter amountAndPayer = Fingerprinter.canonicalJson(List.of("/amount", "/payer/iban"));
            Fingerprint base = fingerprint(amountAndPayer, "application/json",
                    "{\"amount\":100,\"payer\":{\"iban\":\"DE89\"},\"requestedAt\":\"10:00\"}");

            assertThat(fingerprint(amountAndPayer, "application/json",
                    "{\"requestedAt\":\"10:05\",\"payer\":{\"iban\":\"DE89\",\"name\":\"x\"},\"amount\":100.0}"))
                    .isEqualTo(base);
            assertThat(fingerprint(amountAndPayer, "application/json",
                    "{\"amount\":100,\"payer\":{\"iban\":\"DE90\"},\"requestedAt\":\"10:00\"}"))
                    .isNotEqualTo(base);
            assertThat(fingerprint(amountAndPayer, "application/json", "{\"amount\":100,\"payer\":{\"iban\":null}}"))
                    .isNotEqualTo(fingerprint(amountAndPayer, "application/json", "{\"amount\":100,\"payer\":{}}"));
        }

        @Test
        void standardIsUnchanged() {
            // A fingerprint stored before canonicalJson() existed must still match.
            assertThat(fingerprint(STANDARD, "application/json", BODY).hex())
                    .isEqualTo(expectedStandardHex("POST", "/payments", "application/json", BODY));
        }

        private String expectedStandardHex(String method, String route, String contentType, String body) {
            MessageDigest sha = Hex.sha256();
            for (String field : List.of(method, route, contentType, body)) {
                byte[] bytes = field.getBytes(UTF_8);
                sha.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
                sha.update(bytes);
            }
            return Hex.encode(sha.digest());
        }
    }

    /**
     * Random JSON trees, each written twice with random member order, white space, escapes and number
     * spellings; both must give exactly the canonical form computed independently here from the tree
     * (numbers through BigDecimal). The seed is fixed and in every failure message.
     */
    @Nested
    class RandomTrees {
        private static final long SEED = 0x5EED_CA40L;
        private static final int CASES = 600;
        private static final Object NULL = new Object() {
            @Override
            public String toString() {
                return "null";
            }
        };

        @Test
        @DisplayName("random trees, serialised two random ways, canonicalise to the reference form, seed " + SEED)
        void randomSerialisationsOfOneTreeAreCanonicallyEqual() {
            Random random = new Random(SEED);
            for (int i = 0; i < CASES; i++) {
                Object tree = tree(random, 0);
                String a = serialise(tree, random);
                String b = serialise(tree, random);
                String expected = reference(tree);
                String context = "seed " + SEED + ", case " + i + ":\n a = " + a + "\n b = " + b;

                String canonicalA = canon(a);
                assertThat(canonicalA).as(context).isEqualTo(expected);
                assertThat(canon(b)).as(context).isEqualTo(expected);
                assertThat(canon(canonicalA)).as("idempotent, " + context).isEqualTo(canonicalA);
            }
        }

        @Test
        void differentTreesHaveDifferentCanonicalForms() {
            Random random = new Random(SEED + 1);
            Map<String, String> canonicalToReference = new TreeMap<>();
            for (int i = 0; i < CASES; i++) {
                Object tree = tree(random, 0);
                String input = serialise(tree, random);
                String previous = canonicalToReference.put(canon(input), reference(tree));
                if (previous != null) {
                    assertThat(previous).as("seed " + (SEED + 1) + ", case " + i + ": same canonical form, so the same tree")
                            .isEqualTo(reference(tree));
                }
            }
            assertThat(canonicalToReference).as("the generator makes mostly distinct trees").hasSizeGreaterThan(CASES / 2);
        }

        // ---- generator ----

        private Object tree(Random random, int depth) {
            int kind = random.nextInt(depth >= 4 ? 5 : 7);
            switch (kind) {
                case 0:
                    return NULL;
                case 1:
                    return random.nextBoolean();
                case 2:
                case 3:
                    return number(random);
                case 4:
                    return string(random, 6);
                case 5: {
                    List<Object> items = new ArrayList<>();
                    for (int i = random.nextInt(5); i > 0; i--) {
                        items.add(tree(random, depth + 1));
                    }
                    return items;
                }
                default: {
                    Map<String, Object> members = new LinkedHashMap<>();
                    for (int i = random.nextInt(6); i > 0; i--) {
                        members.put(random.nextInt(3) == 0 ? string(random, 3) : NAMES[random.nextInt(NAMES.length)],
                                tree(random, depth + 1));
                    }
                    return members;
                }
            }
        }

        /** Names whose UTF-16 order differs from code point order and from byte order. */
        private static final String[] NAMES = {"", "a", "A", "b", "aa", "a b", "é", "€", "😀", "\uFB33", "\u0080", "1",
                "\r", "\"", "\\", "~", "/"};

        private BigDecimal number(Random random) {
            switch (random.nextInt(4)) {
                case 0:
                    return BigDecimal.valueOf(random.nextInt(2001) - 1000);
                case 1:
                    return BigDecimal.ZERO;
                default:
                    BigInteger unscaled = new BigInteger(1 + random.nextInt(120), random);
                    return new BigDecimal(random.nextBoolean() ? unscaled : unscaled.negate(), random.nextInt(61) - 30);
            }
        }

        private String string(Random random, int maxLength) {
            StringBuilder s = new StringBuilder();
            for (int i = random.nextInt(maxLength + 1); i > 0; i--) {
                switch (random.nextInt(8)) {
                    case 0 -> s.append((char) random.nextInt(0x20));
                    case 1 -> s.append("\"\\/\u007f".charAt(random.nextInt(4)));
                    case 2 -> s.appendCodePoint(0x80 + random.nextInt(0xD800 - 0x80));
                    case 3 -> s.appendCodePoint(0xE000 + random.nextInt(0x10000 - 0xE000));
                    case 4 -> s.appendCodePoint(0x10000 + random.nextInt(0x110000 - 0x10000));
                    default -> s.append((char) (0x20 + random.nextInt(0x5F)));
                }
            }
            return s.toString();
        }

        // ---- random serialisation ----

        private String serialise(Object tree, Random random) {
            StringBuilder out = new StringBuilder();
            space(out, random);
            write(tree, random, out);
            space(out, random);
            return out.toString();
        }

        private void space(StringBuilder out, Random random) {
            for (int i = random.nextInt(4) - 1; i > 0; i--) {
                out.append(" \t\n\r".charAt(random.nextInt(4)));
            }
        }

        @SuppressWarnings("unchecked")
        private void write(Object node, Random random, StringBuilder out) {
            if (node == NULL || node instanceof Boolean) {
                out.append(node);
            } else if (node instanceof BigDecimal number) {
                out.append(spell(number, random));
            } else if (node instanceof String string) {
                escape(string, random, out);
            } else if (node instanceof List<?> items) {
                out.append('[');
                for (int i = 0; i < items.size(); i++) {
                    space(out, random);
                    if (i > 0) {
                        out.append(',');
                        space(out, random);
                    }
                    write(items.get(i), random, out);
                }
                space(out, random);
                out.append(']');
            } else {
                List<Map.Entry<String, Object>> members = new ArrayList<>(((Map<String, Object>) node).entrySet());
                Collections.shuffle(members, random);
                out.append('{');
                for (int i = 0; i < members.size(); i++) {
                    space(out, random);
                    if (i > 0) {
                        out.append(',');
                        space(out, random);
                    }
                    escape(members.get(i).getKey(), random, out);
                    space(out, random);
                    out.append(':');
                    space(out, random);
                    write(members.get(i).getValue(), random, out);
                }
                space(out, random);
                out.append('}');
            }
        }

        /** Any valid spelling: extra trailing zeros, a shifted exponent with 'e' or 'E', '+', leading zeros, "-0". */
        private String spell(BigDecimal number, Random random) {
            int exponent = random.nextInt(3) == 0 ? 0 : random.nextInt(41) - 20;
            BigDecimal mantissa = number.movePointLeft(exponent);
            mantissa = mantissa.setScale(Math.max(mantissa.scale(), 0) + random.nextInt(3));
            String text = mantissa.toPlainString();
            if (number.signum() == 0 && random.nextBoolean()) {
                text = "-" + text;
            }
            if (exponent != 0 || random.nextInt(4) == 0) {
                String sign = exponent < 0 ? "-" : random.nextBoolean() ? "+" : "";
                text += (random.nextBoolean() ? "e" : "E") + sign + "0".repeat(random.nextInt(3)) + Math.abs(exponent);
            }
            return text;
        }

        private void escape(String s, Random random, StringBuilder out) {
            out.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                boolean escapeIt = random.nextInt(4) == 0;
                if (Character.isHighSurrogate(c)) {
                    char low = s.charAt(++i);
                    if (escapeIt) {
                        out.append(unicodeEscape(c, random)).append(unicodeEscape(low, random));
                    } else {
                        out.append(c).append(low);
                    }
                } else if (c == '"' || c == '\\' || c < 0x20 || escapeIt) {
                    String shortForm = switch (c) {
                        case '"' -> "\\\"";
                        case '\\' -> "\\\\";
                        case '/' -> "\\/";
                        case '\b' -> "\\b";
                        case '\f' -> "\\f";
                        case '\n' -> "\\n";
                        case '\r' -> "\\r";
                        case '\t' -> "\\t";
                        default -> null;
                    };
                    out.append(shortForm != null && random.nextBoolean() ? shortForm : unicodeEscape(c, random));
                } else {
                    out.append(c);
                }
            }
            out.append('"');
        }

        private String unicodeEscape(char c, Random random) {
            String hex = String.format("%04x", (int) c);
            return "\\u" + (random.nextBoolean() ? hex : hex.toUpperCase(Locale.ROOT));
        }

        // ---- the reference canonical form, written from the tree ----

        @SuppressWarnings("unchecked")
        private String reference(Object node) {
            if (node == NULL || node instanceof Boolean) {
                return node.toString();
            } else if (node instanceof BigDecimal number) {
                return referenceNumber(number);
            } else if (node instanceof String string) {
                return referenceString(string);
            } else if (node instanceof List<?> items) {
                StringBuilder out = new StringBuilder("[");
                for (int i = 0; i < items.size(); i++) {
                    out.append(i > 0 ? "," : "").append(reference(items.get(i)));
                }
                return out.append(']').toString();
            } else {
                // TreeMap orders String keys by compareTo: UTF-16 code units.
                StringBuilder out = new StringBuilder("{");
                new TreeMap<>((Map<String, Object>) node).forEach((name, value) ->
                        out.append(out.length() > 1 ? "," : "").append(referenceString(name)).append(':').append(reference(value)));
                return out.append('}').toString();
            }
        }

        private String referenceNumber(BigDecimal number) {
            if (number.signum() == 0) {
                return "0";
            }
            BigDecimal stripped = number.stripTrailingZeros();
            String digits = stripped.unscaledValue().abs().toString();
            int e = -stripped.scale();
            int k = e + digits.length() - 1;
            String sign = number.signum() < 0 ? "-" : "";
            if (e >= 0 && e <= 20) {
                return sign + digits + "0".repeat(e);
            } else if (e < 0 && k >= 0) {
                return sign + digits.substring(0, k + 1) + "." + digits.substring(k + 1);
            } else if (e < 0 && k >= -6) {
                return sign + "0." + "0".repeat(-k - 1) + digits;
            }
            return sign + digits.charAt(0) + (digits.length() > 1 ? "." + digits.substring(1) : "") + "e" + k;
        }

        private String referenceString(String s) {
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
    }
}
