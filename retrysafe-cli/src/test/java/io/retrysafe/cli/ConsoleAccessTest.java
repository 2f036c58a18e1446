package io.retrysafe.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.Headers;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Clock;
import org.junit.jupiter.api.Test;

/**
 * The console's gatekeeping pieces on their own: tokens, hosts, origins, record references, escaping;
 * and the browser test's rule for a machine without the browser.
 */
class ConsoleAccessTest {
    private static final String TOKEN = "0123456789abcdef-token";
    private final ConsoleAccess access = new ConsoleAccess(new ConsoleConfig(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), TOKEN, false, Clock.systemUTC()), 7007);

    private static Headers headers(String... nameValue) {
        Headers h = new Headers();
        for (int i = 0; i < nameValue.length; i += 2) {
            h.add(nameValue[i], nameValue[i + 1]);
        }
        return h;
    }

    @Test
    void onlyTheTokenAuthenticatesInItsCookieOrAsBearer() {
        assertThat(access.isAuthenticated(headers())).isFalse();
        assertThat(access.isAuthenticated(headers("Cookie", "a=b; retrysafe-console-7007=" + TOKEN))).isTrue();
        assertThat(access.isAuthenticated(headers("Cookie", "retrysafe-console-7008=" + TOKEN)))
                .as("another console's cookie").isFalse();
        assertThat(access.isAuthenticated(headers("Cookie", "retrysafe-console-7007=" + TOKEN + "x"))).isFalse();
        assertThat(access.isAuthenticated(headers("Authorization", "Bearer " + TOKEN))).isTrue();
        assertThat(access.isAuthenticated(headers("Authorization", "Basic " + TOKEN))).isFalse();
        assertThat(access.isToken(null)).isFalse();
        assertThat(access.isCsrf(access.csrf())).isTrue();
        assertThat(access.csrf()).as("the CSRF token is not the access token").doesNotContain(TOKEN);
        assertThat(access.cookie()).endsWith("; Path=/; HttpOnly; SameSite=Strict");
    }

    @Test
    void onLoopbackOnlyLoopbackNamesAndTheConsolesOwnOriginPass() {
        assertThat(access.isOwnHost("127.0.0.1:7007")).isTrue();
        assertThat(access.isOwnHost("localhost:7007")).isTrue();
        assertThat(access.isOwnHost("[::1]:7007")).isTrue();
        assertThat(access.isOwnHost("rebind.example:7007")).isFalse();
        assertThat(access.isOwnHost("127.0.0.1:7008")).isFalse();
        assertThat(access.isOwnHost(null)).isFalse();

        assertThat(access.isSameOrigin(headers("Host", "127.0.0.1:7007"))).as("no Origin: the CSRF token decides").isTrue();
        assertThat(access.isSameOrigin(headers("Host", "127.0.0.1:7007", "Origin", "http://127.0.0.1:7007"))).isTrue();
        assertThat(access.isSameOrigin(headers("Host", "127.0.0.1:7007", "Origin", "http://localhost:7007")))
                .as("another origin, even on this machine").isFalse();
        assertThat(access.isSameOrigin(headers("Host", "127.0.0.1:7007", "Origin", "null"))).isFalse();
        assertThat(access.isSameOrigin(headers("Host", "127.0.0.1:7007", "Origin", "https://127.0.0.1:7007"))).isFalse();
        assertThat(access.isSameOrigin(headers("Host", "127.0.0.1:7007", "Sec-Fetch-Site", "same-site"))).isFalse();
    }

    @Test
    void aReferenceOpensOnlyInTheConsoleThatMadeItAndUnaltered() {
        RecordRefs refs = new RecordRefs(new SecureRandom());
        String ref = refs.seal("tenant|POST /p", "k-1");
        assertThat(ref).doesNotContain("k-1", "tenant");
        assertThat(refs.open(ref)).hasValue(new RecordRefs.Ref("tenant|POST /p", "k-1"));
        assertThat(new RecordRefs(new SecureRandom()).open(ref)).as("another run's reference").isEmpty();
        char last = ref.charAt(ref.length() - 1);
        assertThat(refs.open(ref.substring(0, ref.length() - 1) + (last == 'A' ? 'B' : 'A'))).isEmpty();
        char middle = ref.charAt(ref.length() / 2);
        assertThat(refs.open(ref.substring(0, ref.length() / 2) + (middle == 'A' ? 'B' : 'A')
                + ref.substring(ref.length() / 2 + 1))).isEmpty();
        assertThat(refs.open("not base64 !")).isEmpty();
        assertThat(refs.open("")).isEmpty();
        assertThat(refs.open(null)).isEmpty();
        assertThat(new RecordRefs.Ref("s", "secret-key").toString()).doesNotContain("secret-key");
    }

    @Test
    void valuesAreEscapedForTextAndQuotedAttributes() {
        assertThat(Html.text("<a href=\"x\" title='y'>&</a>"))
                .isEqualTo("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
        assertThat(ConsoleServer.route("user-1|POST /payments")).isEqualTo("POST /payments");
        assertThat(ConsoleServer.route("orders-consumer")).isEqualTo("orders-consumer");
        assertThat(ConsoleServer.parse("a=1&b=%3Cx%3E&a=2&c")).containsEntry("a", "1").containsEntry("b", "<x>")
                .containsEntry("c", "");
    }

    @Test
    void withoutTheBrowserTheBrowserTestFailsInCiAndIsSkippedElsewhere() {
        java.nio.file.Path missing = java.nio.file.Path.of("/nonexistent/chromium");
        assertThatThrownBy(() -> ConsoleBrowserIT.requireBrowser(missing, missing, true))
                .isInstanceOf(AssertionError.class).hasMessageContaining("chromium-driver");
        assertThatThrownBy(() -> ConsoleBrowserIT.requireBrowser(missing, missing, false))
                .isInstanceOf(org.opentest4j.TestAbortedException.class);
    }
}
