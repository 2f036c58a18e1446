package io.retrysafe;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FingerprintTest {
    /** SHA-256 of "abc" (FIPS 180-2, appendix B.1). */
    private static final String SHA256_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    @Test
    void sameInputSameFingerprint() {
        Fingerprint a = Fingerprint.sha256("abc".getBytes(UTF_8));
        Fingerprint b = Fingerprint.sha256("abc".getBytes(UTF_8));

        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a.matches(b)).isTrue();
        assertThat(a.hex()).isEqualTo(SHA256_ABC);
    }

    @Test
    void differentInputDifferentFingerprint() {
        Fingerprint a = Fingerprint.sha256("abc".getBytes(UTF_8));
        Fingerprint b = Fingerprint.sha256("abd".getBytes(UTF_8));

        assertThat(a).isNotEqualTo(b);
        assertThat(a.matches(b)).isFalse();
        assertThat(a.matches(null)).isFalse();
    }

    @Test
    void hexRoundTrip() {
        Fingerprint original = Fingerprint.sha256(new byte[] {0, 1, 2, (byte) 0xff});

        Fingerprint parsed = Fingerprint.ofHex(original.hex());

        assertThat(parsed).isEqualTo(original);
        assertThat(parsed.hex()).isEqualTo(original.hex()).hasSize(64).matches("[0-9a-f]{64}");
        assertThat(Fingerprint.ofHex(SHA256_ABC.toUpperCase())).as("upper-case hex").isEqualTo(Fingerprint.ofHex(SHA256_ABC));
        assertThat(Fingerprint.of(original.bytes())).isEqualTo(original);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 31, 33, 64})
    void wrongLengthIsRejected(int length) {
        assertThatThrownBy(() -> Fingerprint.of(new byte[length])).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a fingerprint has 32 bytes, but was " + length);
    }

    @Test
    void wrongHexIsRejected() {
        assertThatThrownBy(() -> Fingerprint.ofHex(SHA256_ABC.substring(2))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("a fingerprint has 32 bytes, but was 31");
        assertThatThrownBy(() -> Fingerprint.ofHex(SHA256_ABC.substring(1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("hex string must have an even length, but was 63");
        assertThatThrownBy(() -> Fingerprint.ofHex("zz" + SHA256_ABC.substring(2))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("not a hex string");
        assertThatThrownBy(() -> Fingerprint.ofHex(null)).isInstanceOf(NullPointerException.class)
                .hasMessage("hex must not be null");
    }

    @Test
    void nonAsciiDigitsAreNotHex() {
        // Character.digit accepts these; a fingerprint read back from storage must be plain hex.
        String arabicIndicThree = "\u0663";
        String fullWidthA = "\uFF21";

        assertThatThrownBy(() -> Fingerprint.ofHex(arabicIndicThree + SHA256_ABC.substring(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("not a hex string");
        assertThatThrownBy(() -> Fingerprint.ofHex(fullWidthA + SHA256_ABC.substring(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("not a hex string");
    }

    @Test
    void bytesAreCopiedInAndOut() {
        byte[] digest = Fingerprint.sha256("abc".getBytes(UTF_8)).bytes();
        Fingerprint fingerprint = Fingerprint.of(digest);

        digest[0] ^= 1;
        fingerprint.bytes()[1] ^= 1;

        assertThat(fingerprint.hex()).isEqualTo(SHA256_ABC);
    }

    @Test
    void toStringShowsTheHex() {
        assertThat(Fingerprint.ofHex(SHA256_ABC)).hasToString("Fingerprint[" + SHA256_ABC + "]");
    }
}
