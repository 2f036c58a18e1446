package io.retrysafe;

import static io.retrysafe.Generated.forAll;
import static io.retrysafe.Generated.length;
import static io.retrysafe.Generated.oneOf;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.retrysafe.internal.Fingerprinter;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link Fingerprinter} and {@link Fingerprint} on generated requests: requests that differ in
 * method, route, media type or body never share a fingerprint, those that differ only in spelling do,
 * and a fingerprint survives its hex and byte forms.
 */
class FingerprintPropertyTest {
    private static final int TRIES = 2_000;

    private record Request(String method, String route, String contentType, byte[] body) {
        @Override
        public String toString() {
            return method + " " + route + " [" + contentType + "] " + new String(body, UTF_8);
        }
    }

    /** Few letters, so that shifting one from a field to the next (route "ab" + body "c" vs "a" + "bc") is common. */
    private static Request request(SplittableRandom r) {
        return new Request(r.nextInt(6) == 0 ? null : letters(r, 3).toUpperCase(Locale.ROOT),
                r.nextInt(6) == 0 ? null : "/" + letters(r, 3),
                r.nextInt(6) == 0 ? null : letters(r, 3),
                letters(r, 3).getBytes(UTF_8));
    }

    private static String letters(SplittableRandom r, int max) {
        StringBuilder s = new StringBuilder();
        int n = r.nextInt(max + 1);
        for (int i = 0; i < n; i++) {
            s.append(oneOf(r, "a", "b", "/"));
        }
        return s.toString();
    }

    @Test
    void standardFingerprintsAreEqualExactlyForEqualRequests() {
        Fingerprinter standard = Fingerprinter.standard();
        forAll(TRIES * 5, r -> new Request[] {request(r), request(r)}, p -> {
            Request a = p[0];
            Request b = p[1];
            boolean equal = normal(a.method()).equals(normal(b.method())) && normal(a.route()).equals(normal(b.route()))
                    && normal(a.contentType()).equals(normal(b.contentType())) && Arrays.equals(a.body(), b.body());
            assertThat(standard.fingerprint(a.method(), a.route(), a.contentType(), a.body())
                    .equals(standard.fingerprint(b.method(), b.route(), b.contentType(), b.body())))
                    .as("%s vs %s", a, b).isEqualTo(equal);
        });
    }

    /** The method's case, the media type's case and white space, and a JSON charset say nothing about the intent. */
    @Test
    void aJsonRequestSpelledDifferentlyHasTheSameFingerprint() {
        Fingerprinter json = Fingerprinter.canonicalJson();
        forAll(TRIES, r -> new Object[] {JsonModel.any(r, 3), r.nextLong()}, c -> {
            JsonModel body = (JsonModel) c[0];
            SplittableRandom r = new SplittableRandom((long) c[1]);
            Fingerprint expected = json.fingerprint("POST", "/payments", "application/json", JsonModel.plain(body));
            String contentType = oneOf(r, "application/json", "Application/JSON", "application/json; charset=utf-8",
                    "application/json;charset=UTF-8", " application/json ");
            assertThat(json.fingerprint(oneOf(r, "POST", "post", "Post"), "/payments", contentType,
                    JsonModel.respelled(body, r))).isEqualTo(expected);
            assertThat(json.fingerprint("POST", "/payments", "application/merge-patch+json", JsonModel.plain(body)))
                    .as("another JSON media type is another request").isNotEqualTo(expected);
            assertThat(json.fingerprint("POST", "/payments/", "application/json", JsonModel.plain(body)))
                    .as("another route").isNotEqualTo(expected);
        });
    }

    /** A body that is not labelled JSON is hashed as bytes by both fingerprinters, whatever it holds. */
    @Test
    void aBodyNotLabelledJsonIsHashedAsItsBytes() {
        Fingerprinter json = Fingerprinter.canonicalJson();
        Fingerprinter standard = Fingerprinter.standard();
        forAll(TRIES, r -> new Object[] {oneOf(r, null, "text/plain", "application/jsonx", "application/+json",
                "json", "application/x-www-form-urlencoded", "application/json-seq"), Generated.bytes(r, length(r, 64))},
                c -> {
                    String contentType = (String) c[0];
                    byte[] body = (byte[]) c[1];
                    assertThat(json.fingerprint("POST", "/p", contentType, body))
                            .isEqualTo(standard.fingerprint("POST", "/p", contentType, body));
                });
    }

    /** Anything labelled JSON: a fingerprint or MalformedJsonException, never another exception. */
    @Test
    void anyBodyLabelledJsonIsFingerprintedOrMalformed() {
        Fingerprinter[] fingerprinters = {Fingerprinter.canonicalJson(),
            Fingerprinter.canonicalJson(java.util.List.of("/amount", "/payer/iban", "/items/0"))};
        forAll(TRIES, r -> r.nextBoolean() ? Generated.bytes(r, length(r, 100))
                : Generated.anyString(r, length(r, 100)).getBytes(UTF_8), body -> {
                    for (Fingerprinter f : fingerprinters) {
                        Throwable thrown = catchThrowable(() -> f.fingerprint("POST", "/p", "application/json", body));
                        assertThat(thrown).satisfiesAnyOf(t -> assertThat(t).isNull(),
                                t -> assertThat(t).isInstanceOf(MalformedJsonException.class));
                    }
                });
    }

    @Test
    void aFingerprintSurvivesItsHexAndByteForms() {
        forAll(TRIES, r -> Generated.bytes(r, Fingerprint.LENGTH), digest -> {
            Fingerprint f = Fingerprint.of(digest);
            assertThat(Fingerprint.ofHex(f.hex())).isEqualTo(f).matches(f::matches);
            assertThat(Fingerprint.ofHex(f.hex().toUpperCase(Locale.ROOT))).isEqualTo(f);
            assertThat(Fingerprint.of(f.bytes())).isEqualTo(f).hasSameHashCodeAs(f);
            assertThat(f.hex()).isEqualTo(HexFormat.of().formatHex(digest));
            digest[0]++;
            assertThat(f.bytes()).as("a copy, not the caller's array").isNotEqualTo(digest);
            assertThat(f.matches(Fingerprint.of(digest))).isFalse();
        });
    }

    /** Any text offered as a hex fingerprint: a fingerprint or IllegalArgumentException. */
    @Test
    void anyHexTextIsAFingerprintOrIllegalArgument() {
        forAll(TRIES, r -> r.nextBoolean() ? Generated.anyString(r, length(r, 80, 64))
                : HexFormat.of().formatHex(Generated.bytes(r, length(r, 40, 32))), hex -> {
                    Throwable thrown = catchThrowable(() -> Fingerprint.ofHex(hex));
                    if (thrown == null) {
                        assertThat(hex).hasSize(2 * Fingerprint.LENGTH);
                    } else {
                        assertThat(thrown).isInstanceOf(IllegalArgumentException.class);
                    }
                });
    }

    private static String normal(String s) {
        return s == null ? "" : s;
    }
}
