package io.retrysafe.internal;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.Fingerprint;
import org.junit.jupiter.api.Test;

class FingerprinterTest {
    private static final Fingerprinter STANDARD = Fingerprinter.standard();
    private static final byte[] BODY = "{\"amount\":100}".getBytes(UTF_8);

    private static Fingerprint base() {
        return STANDARD.fingerprint("POST", "/payments", "application/json", BODY);
    }

    @Test
    void sameRequestSameFingerprint() {
        assertThat(STANDARD.fingerprint("POST", "/payments", "application/json", BODY.clone())).isEqualTo(base());
    }

    @Test
    void methodChangesIt() {
        assertThat(STANDARD.fingerprint("PUT", "/payments", "application/json", BODY)).isNotEqualTo(base());
    }

    @Test
    void methodCaseDoesNotChangeIt() {
        assertThat(STANDARD.fingerprint("post", "/payments", "application/json", BODY)).isEqualTo(base());
    }

    @Test
    void routeChangesIt() {
        assertThat(STANDARD.fingerprint("POST", "/refunds", "application/json", BODY)).isNotEqualTo(base());
        assertThat(STANDARD.fingerprint("POST", "/Payments", "application/json", BODY)).as("route is case-sensitive")
                .isNotEqualTo(base());
    }

    @Test
    void contentTypeChangesIt() {
        assertThat(STANDARD.fingerprint("POST", "/payments", "application/xml", BODY)).isNotEqualTo(base());
        assertThat(STANDARD.fingerprint("POST", "/payments", null, BODY)).isNotEqualTo(base());
    }

    @Test
    void contentTypeCaseAndWhiteSpaceAreNormalised() {
        Fingerprint withCharset = STANDARD.fingerprint("POST", "/payments", "application/json;charset=utf-8", BODY);

        assertThat(STANDARD.fingerprint("POST", "/payments", "Application/JSON; charset=UTF-8", BODY))
                .isEqualTo(withCharset);
        assertThat(STANDARD.fingerprint("POST", "/payments", " application/json ;\tcharset=utf-8 ", BODY))
                .isEqualTo(withCharset);
        assertThat(STANDARD.fingerprint("POST", "/payments", "APPLICATION/JSON", BODY)).isEqualTo(base());
    }

    @Test
    void bodyChangesIt() {
        assertThat(STANDARD.fingerprint("POST", "/payments", "application/json", "{\"amount\":101}".getBytes(UTF_8)))
                .isNotEqualTo(base());
        assertThat(STANDARD.fingerprint("POST", "/payments", "application/json", new byte[0])).isNotEqualTo(base());
    }

    @Test
    void fieldBoundariesAreUnambiguous() {
        assertThat(STANDARD.fingerprint("POST", "/ab", "c", BODY))
                .isNotEqualTo(STANDARD.fingerprint("POST", "/a", "bc", BODY));
        assertThat(STANDARD.fingerprint("POST", "/a", "text/plain", "bc".getBytes(UTF_8)))
                .isNotEqualTo(STANDARD.fingerprint("POST", "/a", "text/plainb", "c".getBytes(UTF_8)));
        assertThat(STANDARD.fingerprint("GET", "/x", "", new byte[0]))
                .isNotEqualTo(STANDARD.fingerprint("GE", "T/x", "", new byte[0]));
        assertThat(STANDARD.fingerprint("POST", "", "", "/payments".getBytes(UTF_8)))
                .isNotEqualTo(STANDARD.fingerprint("POST", "/payments", "", new byte[0]));
    }

    @Test
    void bodyBytesAreHashedAsTheyAre() {
        byte[] withZeros = {0, 0, 1};
        byte[] fewerZeros = {0, 1};

        assertThat(STANDARD.fingerprint("POST", "/p", "application/octet-stream", withZeros))
                .isNotEqualTo(STANDARD.fingerprint("POST", "/p", "application/octet-stream", fewerZeros));
    }

    @Test
    void aJsonRetryThatAddsACharsetOrReordersMembersIsTheSameRequest() {
        Fingerprinter json = Fingerprinter.canonicalJson();
        Fingerprint first = json.fingerprint("POST", "/payments", "application/json",
                "{\"amount\":100,\"account\":\"a\"}".getBytes(UTF_8));
        Fingerprint retry = json.fingerprint("POST", "/payments", "Application/JSON; charset=UTF-8",
                "{ \"account\": \"a\", \"amount\": 1e2 }".getBytes(UTF_8));
        assertThat(retry).isEqualTo(first);
        assertThat(json.fingerprint("POST", "/payments", "application/problem+json",
                "{\"amount\":100,\"account\":\"a\"}".getBytes(UTF_8))).as("another media type").isNotEqualTo(first);
    }
}
