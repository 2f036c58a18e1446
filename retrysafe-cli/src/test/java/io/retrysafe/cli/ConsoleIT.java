package io.retrysafe.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.AesGcmProtection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.spi.FencedWrite;
import io.retrysafe.spi.RecordStatus;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The console attacked over HTTP, against a real PostgreSQL: requests without the access token, forms
 * from another site, a foreign {@code Host}, markup stored in a scope or key, and a listening address
 * off loopback. Every refused change is checked in the store: nothing changed.
 */
class ConsoleIT {
    private static final Pattern REF = Pattern.compile("/release\\?ref=([A-Za-z0-9_-]+)");
    private static final Pattern CSRF = Pattern.compile("name=\"csrf\" value=\"([0-9a-f]+)\"");
    private static final String EVIL_SCOPE = "<script>alert(1)</script>|POST /x";
    private static final String EVIL_KEY = "\"><img src=x onerror=alert(2)>";

    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private ConsoleFixture f;

    @BeforeEach
    void start() throws Exception {
        f = new ConsoleFixture(false);
    }

    @AfterEach
    void stop() throws Exception {
        f.close();
    }

    private HttpResponse<String> get(String path, String... headers) throws Exception {
        return get(f, path, headers);
    }

    private HttpResponse<String> get(ConsoleFixture at, String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(at.base() + path)).timeout(Duration.ofSeconds(30));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> authed(String path) throws Exception {
        return authed(f, path);
    }

    private HttpResponse<String> authed(ConsoleFixture at, String path) throws Exception {
        return get(at, path, "Authorization", "Bearer " + ConsoleFixture.TOKEN);
    }

    private HttpResponse<String> post(String path, Map<String, String> form, String... headers) throws Exception {
        return post(f, path, form, headers);
    }

    private HttpResponse<String> post(ConsoleFixture at, String path, Map<String, String> form, String... headers)
            throws Exception {
        List<String> pairs = new ArrayList<>();
        form.forEach((k, v) -> pairs.add(URLEncoder.encode(k, StandardCharsets.UTF_8) + "="
                + URLEncoder.encode(v, StandardCharsets.UTF_8)));
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(at.base() + path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .header("Authorization", "Bearer " + ConsoleFixture.TOKEN)
                .POST(HttpRequest.BodyPublishers.ofString(String.join("&", pairs)));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static String first(Pattern p, String text) {
        Matcher m = p.matcher(text);
        assertThat(m.find()).as("%s in %s", p, text).isTrue();
        return m.group(1);
    }

    @Test
    void withoutTheTokenNothingIsShownAndTheFirstVisitTradesItForACookie() throws Exception {
        f.stuck("tenant-1|POST /payments", "k-" + java.util.UUID.randomUUID());
        for (HttpResponse<String> refused : List.of(get("/"), get("/stuck"), get("/?token=wrong-token-0123456789"),
                get("/", "Authorization", "Bearer wrong-token-0123456789"),
                get("/", "Cookie", "retrysafe-console-" + f.console.port() + "=wrong-token-0123456789"))) {
            assertThat(refused.statusCode()).as(refused.uri().toString()).isEqualTo(401);
            assertThat(refused.body()).doesNotContain("tenant-1").contains("access token");
            securityHeaders(refused);
        }

        HttpResponse<String> first = get("/stuck?token=" + ConsoleFixture.TOKEN);
        assertThat(first.statusCode()).isEqualTo(303);
        assertThat(first.headers().firstValue("Location")).as("the token leaves the address bar").hasValue("/stuck");
        String cookie = first.headers().firstValue("Set-Cookie").orElseThrow();
        assertThat(cookie).contains("HttpOnly", "SameSite=Strict").startsWith("retrysafe-console-" + f.console.port()
                + "=" + ConsoleFixture.TOKEN);

        assertThat(get("//evil.example/?token=" + ConsoleFixture.TOKEN).headers().firstValue("Location"))
                .as("never a redirect to another site").hasValue("/");

        HttpResponse<String> withCookie = get("/stuck", "Cookie", cookie.split(";")[0]);
        assertThat(withCookie.statusCode()).isEqualTo(200);
        assertThat(withCookie.body()).contains("tenant-1|POST /payments");
        securityHeaders(withCookie);
        HttpResponse<String> css = get("/static/console.css");
        assertThat(css.statusCode()).isEqualTo(200);
        assertThat(css.headers().firstValue("Content-Type")).hasValue("text/css; charset=utf-8");
    }

    private static void securityHeaders(HttpResponse<String> r) {
        assertThat(r.headers().firstValue("Content-Security-Policy").orElseThrow())
                .contains("default-src 'self'", "script-src 'none'", "frame-ancestors 'none'");
        assertThat(r.headers().firstValue("X-Frame-Options")).hasValue("DENY");
        assertThat(r.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
    }

    @Test
    void aReleaseFromAnotherSiteOrWithoutTheCsrfTokenChangesNothing() throws Exception {
        IdempotencyKey stuck = f.stuck("tenant-2|POST /payments", "k-" + java.util.UUID.randomUUID());
        String ref = first(REF, authed("/stuck").body());
        String confirmPage = authed("/release?ref=" + ref).body();
        String csrf = first(CSRF, confirmPage);
        Map<String, String> noCsrf = Map.of("ref", ref, "attempt", "1", "confirm", stuck.digest());
        Map<String, String> form = Map.of("ref", ref, "attempt", "1", "confirm", stuck.digest(), "csrf", csrf);

        assertThat(post("/release", noCsrf).statusCode()).isEqualTo(403);
        assertThat(post("/release", Map.of("ref", ref, "attempt", "1", "confirm", stuck.digest(), "csrf", "0".repeat(64)))
                .statusCode()).isEqualTo(403);
        assertThat(post("/release", form, "Origin", "http://evil.example").statusCode()).isEqualTo(403);
        assertThat(post("/release", form, "Origin", "null").statusCode()).isEqualTo(403);
        assertThat(post("/release", form, "Sec-Fetch-Site", "cross-site").statusCode()).isEqualTo(403);
        HttpResponse<String> unconfirmed = post("/release", Map.of("ref", ref, "attempt", "1", "confirm", "nope",
                "csrf", csrf));
        assertThat(unconfirmed.statusCode()).isEqualTo(400);
        assertThat(unconfirmed.body()).contains("not confirmed");
        HttpResponse<String> forged = post("/release", Map.of("ref", ref.substring(0, ref.length() - 2) + "AA",
                "attempt", "1", "confirm", stuck.digest(), "csrf", csrf));
        assertThat(forged.statusCode()).as("an altered reference opens nothing").isEqualTo(404);
        assertThat(f.store.inspect(stuck).orElseThrow().status()).as("nothing changed").isEqualTo(RecordStatus.IN_PROGRESS);

        HttpResponse<String> released = post("/release", form, "Origin", f.base(), "Sec-Fetch-Site", "same-origin");
        assertThat(released.statusCode()).as(released.body()).isEqualTo(200);
        assertThat(released.body()).contains("released: key digest " + stuck.digest());
        assertThat(f.store.inspect(stuck).orElseThrow().status()).isEqualTo(RecordStatus.FAILED);
        HttpResponse<String> again = post("/release", form, "Origin", f.base());
        assertThat(again.statusCode()).isEqualTo(409);
        assertThat(again.body()).contains("is FAILED: release frees IN_PROGRESS keys only");
    }

    @Test
    void markupStoredInAScopeOrKeyIsShownAsText() throws Exception {
        IdempotencyKey evil = f.stuck(EVIL_SCOPE, EVIL_KEY);
        List<String> pages = new ArrayList<>(List.of(authed("/").body(), authed("/records").body(), authed("/stuck").body()));
        String ref = first(REF, pages.get(2));
        pages.add(authed("/record?ref=" + ref).body());
        pages.add(authed("/release?ref=" + ref).body());
        for (String page : pages) {
            assertThat(page).doesNotContain("<script", "<img", "onerror=alert").contains("&lt;script&gt;alert(1)&lt;/script&gt;");
        }
        assertThat(pages.get(3)).contains(evil.digest()).doesNotContain("onerror").doesNotContain("show the raw key");
        HttpResponse<String> reveal = authed("/record?ref=" + ref + "&key=1");
        assertThat(reveal.statusCode()).as("raw keys only when the console allows them").isEqualTo(403);
        assertThat(reveal.body()).doesNotContain("onerror");

        HttpResponse<String> lint = post("/keys/lint", Map.of("keys", "<b>bold</b>", "csrf", first(CSRF,
                authed("/keys").body())));
        assertThat(lint.body()).doesNotContain("<b>bold").contains("&lt;b&gt;bold&lt;/b&gt;");
    }

    @Test
    void aSealedAnswerStaysSealedAndARawKeyIsShownOnlyWhenAllowedAndAsked() throws Exception {
        IdempotencyKey sealed = IdempotencyKey.of("tenant-3|POST /payments", "k-" + java.util.UUID.randomUUID());
        var token = f.claim(sealed);
        AesGcmProtection aes = AesGcmProtection.builder().key("2026-11", new byte[32]).currentKey("2026-11").build();
        assertThat(f.store.complete(sealed, token, aes.seal(sealed, StoredResponse.of(201,
                ("{\"card\":\"" + ConsoleFixture.CARD + "\"}").getBytes(StandardCharsets.UTF_8))), ConsoleFixture.RETENTION))
                .isEqualTo(FencedWrite.COMMITTED);
        String csrf = first(CSRF, authed("/keys").body());
        HttpResponse<String> lookup = post("/lookup", Map.of("scope", sealed.scope(), "key", sealed.value(), "csrf", csrf));
        assertThat(lookup.statusCode()).isEqualTo(303);
        String location = lookup.headers().firstValue("Location").orElseThrow();
        assertThat(location).startsWith("/record?ref=").doesNotContain(sealed.value());
        String page = authed(location + "&body=1").body();
        assertThat(page).contains("Sealed at rest (AES-GCM, key id <code>2026-11</code>)")
                .doesNotContain(ConsoleFixture.CARD, sealed.value(), "show the raw key");

        try (ConsoleFixture revealing = new ConsoleFixture(true)) {
            IdempotencyKey key = IdempotencyKey.of("tenant-4|POST /payments", "k-" + java.util.UUID.randomUUID());
            revealing.claim(key);
            String ref = first(REF, authed(revealing, "/records").body());
            assertThat(authed(revealing, "/record?ref=" + ref).body()).contains("show the raw key")
                    .doesNotContain(key.value());
            String revealed = authed(revealing, "/record?ref=" + ref + "&key=1").body();
            assertThat(revealed).contains("<code id=\"raw-key\">&quot;" + key.value() + "&quot;</code>");
        }
    }

    @Test
    void onMariaDbTheStuckKeyShowsAndIsReleased() throws Exception {
        try (ConsoleFixture maria = new ConsoleFixture(JdbcDialect.MARIADB, false)) {
            IdempotencyKey stuck = maria.stuck("tenant-5|POST /payments", "k-" + java.util.UUID.randomUUID());
            maria.completedRedacted("tenant-5|POST /refunds");
            assertThat(authed(maria, "/").body()).contains("2 live records", ">1 stuck</a>", "POST /refunds");
            String ref = first(REF, authed(maria, "/stuck").body());
            String csrf = first(CSRF, authed(maria, "/release?ref=" + ref).body());
            HttpResponse<String> released = post(maria, "/release", Map.of("ref", ref, "attempt", "1", "confirm",
                    stuck.digest(), "csrf", csrf), "Origin", maria.base());
            assertThat(released.statusCode()).as(released.body()).isEqualTo(200);
            assertThat(maria.store.inspect(stuck).orElseThrow().status()).isEqualTo(RecordStatus.FAILED);
        }
    }

    @Test
    void aPageServedUnderAnotherHostNameIsRefused() throws Exception {
        // A site whose name was pointed at 127.0.0.1 (DNS rebinding) sends its own name as Host.
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", f.console.port()), 10_000);
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(("GET /?token=" + ConsoleFixture.TOKEN + " HTTP/1.1\r\nHost: rebind.example:"
                    + f.console.port() + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(answer).startsWith("HTTP/1.1 403").doesNotContain("Set-Cookie");
        }
    }

    @Test
    void aListeningAddressOffLoopbackNeedsAllowRemote() {
        List<String> args = new ArrayList<>(List.of("console", "--bind", "0.0.0.0", "--port", "0"));
        args.addAll(f.connectionFlags());
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new RetrySafeCli(Map.of(), Prompter.NONE));
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        assertThat(cli.execute(args.toArray(String[]::new))).isEqualTo(Exit.USAGE);
        assertThat(err.toString()).startsWith("retrysafe console: --bind 0.0.0.0 is not a loopback address")
                .contains("--allow-remote").doesNotContain("Exception");
        assertThat(out.toString()).isEmpty();

        StringWriter err2 = new StringWriter();
        cli.setErr(new PrintWriter(err2, true));
        List<String> shortToken = new ArrayList<>(List.of("console", "--port", "0", "--token", "short"));
        shortToken.addAll(f.connectionFlags());
        assertThat(cli.execute(shortToken.toArray(String[]::new))).isEqualTo(Exit.USAGE);
        assertThat(err2.toString()).contains("access token must have at least 16 characters");
    }

    @Test
    void badInputGetsAClearPageNeverATrace() throws Exception {
        HttpResponse<String> status = authed("/records?status=STUCK");
        assertThat(status.statusCode()).isEqualTo(400);
        assertThat(status.body()).contains("status must be IN_PROGRESS, COMPLETED or FAILED, but was &quot;STUCK&quot;");
        String csrf = first(CSRF, authed("/keys").body());
        HttpResponse<String> badKey = post("/lookup", Map.of("scope", "tenant-1", "key", "", "csrf", csrf));
        assertThat(badKey.statusCode()).isEqualTo(400);
        HttpResponse<String> badJson = post("/keys/generate", Map.of("type", "intent", "principal", "u-1",
                "operation", "pay", "payload", "{not json", "csrf", csrf));
        assertThat(badJson.statusCode()).isEqualTo(400);
        assertThat(badJson.body()).doesNotContain("Exception", "at io.retrysafe");
        assertThat(authed("/nowhere").statusCode()).isEqualTo(404);
    }
}
