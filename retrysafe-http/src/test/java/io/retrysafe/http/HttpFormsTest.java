package io.retrysafe.http;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.http.HttpForms.MalformedFormException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class HttpFormsTest {

    private static Map<String, List<String>> parse(String query, String body, String contentType) {
        return HttpForms.parse(query, body.getBytes(ISO_8859_1), contentType);
    }

    @Test
    void fieldsAreTheQuerysThenTheBodysDecodedAsAServletContainerDecodesThem() {
        Map<String, List<String>> fields = parse("a=0", "b=x+y&a=%31&a=3&c&=ignored&&", HttpForms.URL_ENCODED);

        assertThat(fields).containsExactly(Map.entry("a", List.of("0", "1", "3")), Map.entry("b", List.of("x y")),
                Map.entry("c", List.of("")));
    }

    @Test
    void theBodyIsDecodedInItsCharsetAndTheQueryInUtf8() {
        assertThat(HttpForms.parse("q=%C3%A9", "n=%E9".getBytes(ISO_8859_1),
                HttpForms.URL_ENCODED + "; charset=ISO-8859-1")).containsEntry("q", List.of("é"))
                .containsEntry("n", List.of("é"));
        assertThat(HttpForms.parse(null, "n=%C3%A9".getBytes(UTF_8), HttpForms.URL_ENCODED))
                .as("UTF-8 without a charset").containsEntry("n", List.of("é"));
    }

    @Test
    void twoSpellingsOfOneFormHaveOneCanonicalForm() {
        byte[] one = HttpForms.canonical(parse(null, "amount=100&currency=EUR&note=a+b", HttpForms.URL_ENCODED));
        byte[] other = HttpForms.canonical(parse(null, "note=a%20b&currency=%45UR&amount=100", HttpForms.URL_ENCODED));
        byte[] changed = HttpForms.canonical(parse(null, "amount=101&currency=EUR&note=a+b", HttpForms.URL_ENCODED));

        assertThat(other).isEqualTo(one);
        assertThat(changed).isNotEqualTo(one);
    }

    @Test
    void theCanonicalFormIsSortedLengthPrefixedFields() {
        // The servlet filter's fingerprints of stored records were made of these bytes: they must not change.
        assertThat(new String(HttpForms.canonical(Map.of("b", List.of("2"), "a", List.of("x=", ""))), UTF_8))
                .isEqualTo("1:a=2:x=\n1:a=0:\n1:b=1:2\n");
    }

    @Test
    void aFormReadAsSentIsFingerprintedAsItsFieldsAndAnyOtherBodyAsItIs() {
        byte[] form = "note=a+b&amount=100".getBytes(UTF_8);
        assertThat(HttpForms.fingerprinted("a=0", form, HttpForms.URL_ENCODED + "; charset=UTF-8"))
                .isEqualTo(HttpForms.canonical(parse("a=0", "amount=100&note=a%20b", HttpForms.URL_ENCODED)));

        byte[] json = "{\"amount\":100}".getBytes(UTF_8);
        assertThat(HttpForms.fingerprinted("a=0", json, "application/json")).isSameAs(json);
        assertThat(HttpForms.fingerprinted(null, form, null)).as("no content type: the bytes").isSameAs(form);
        assertThatThrownBy(() -> HttpForms.fingerprinted(null, "a=%zz".getBytes(UTF_8), HttpForms.URL_ENCODED))
                .isInstanceOf(MalformedFormException.class);
    }

    @Test
    void aMalformedFormIsRefusedWithoutQuotingIt() {
        assertThatThrownBy(() -> parse(null, "a=%zz", HttpForms.URL_ENCODED)).isInstanceOf(MalformedFormException.class)
                .hasMessageNotContaining("%zz");
        assertThatThrownBy(() -> parse(null, "a=%4", HttpForms.URL_ENCODED)).isInstanceOf(MalformedFormException.class);
        assertThatThrownBy(() -> parse(null, "a=%FF", HttpForms.URL_ENCODED)).as("not UTF-8")
                .isInstanceOf(MalformedFormException.class);
        assertThatThrownBy(() -> parse(null, "a=1", HttpForms.URL_ENCODED + ";charset=no-such-charset"))
                .isInstanceOf(MalformedFormException.class);
    }

    @Test
    void partsAreLengthPrefixedWithAbsentApartFromEmpty() {
        byte[] parts = new HttpForms.Parts().part("file", "a.txt", "text/plain").content("hi".getBytes(UTF_8))
                .part("note", null, "").content(new byte[0]).toByteArray();

        assertThat(new String(parts, UTF_8)).isEqualTo("4:file\n5:a.txt\n10:text/plain\n2:hi\n4:note\n-\n0:\n0:\n");
    }

    @Test
    void contentTypesAreRecognisedWhateverTheirCaseAndParameters() {
        assertThat(HttpForms.isUrlEncoded("Application/X-WWW-Form-Urlencoded; charset=UTF-8")).isTrue();
        assertThat(HttpForms.isMultipart("multipart/form-data; boundary=x")).isTrue();
        assertThat(HttpForms.isUrlEncoded("application/json")).isFalse();
        assertThat(HttpForms.isMultipart(null)).isFalse();
    }
}
