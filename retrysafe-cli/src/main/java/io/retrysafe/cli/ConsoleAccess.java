package io.retrysafe.cli;

import com.sun.net.httpserver.Headers;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Locale;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Who may use the console: the holder of its access token (in the query once, then in a cookie that
 * scripts cannot read and other sites do not send), and for a change only a form the console itself
 * served (its CSRF token, and no foreign {@code Origin}). Tokens are compared in constant time.
 */
final class ConsoleAccess {
    private final byte[] token;
    private final String csrf;
    private final String cookieName;
    private final boolean loopback;
    private final int port;

    ConsoleAccess(ConsoleConfig config, int port) {
        this.token = config.token().getBytes(StandardCharsets.US_ASCII);
        this.csrf = hmac(token, "csrf");
        // Cookies are per host, not per port: two consoles on one machine must not overwrite each other's.
        this.cookieName = "retrysafe-console-" + port;
        this.loopback = config.address().getAddress().isLoopbackAddress();
        this.port = port;
    }

    /** Whether {@code candidate} is the access token. */
    boolean isToken(String candidate) {
        return candidate != null && MessageDigest.isEqual(token, candidate.getBytes(StandardCharsets.US_ASCII));
    }

    /** Whether the request carries the token: the console's cookie, or {@code Authorization: Bearer}. */
    boolean isAuthenticated(Headers headers) {
        String auth = headers.getFirst("Authorization");
        if (auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7) && isToken(auth.substring(7).strip())) {
            return true;
        }
        for (String header : headers.getOrDefault("Cookie", java.util.List.of())) {
            for (String pair : header.split(";")) {
                int eq = pair.indexOf('=');
                if (eq > 0 && pair.substring(0, eq).strip().equals(cookieName) && isToken(pair.substring(eq + 1).strip())) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The cookie that carries the token after the first visit. */
    String cookie() {
        return cookieName + "=" + new String(token, StandardCharsets.US_ASCII) + "; Path=/; HttpOnly; SameSite=Strict";
    }

    /** The token every form carries; other sites cannot read it. */
    String csrf() {
        return csrf;
    }

    boolean isCsrf(String candidate) {
        return candidate != null && MessageDigest.isEqual(csrf.getBytes(StandardCharsets.US_ASCII),
                candidate.getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * Whether the {@code Host} header names this console. On loopback, only a loopback name is accepted:
     * a page of another site whose name was pointed at 127.0.0.1 (DNS rebinding) is refused. A console
     * allowed off loopback is reached by whatever name the network gives it.
     */
    boolean isOwnHost(String host) {
        if (!loopback) {
            return true;
        }
        if (host == null) {
            return false;
        }
        String h = host.toLowerCase(Locale.ROOT);
        return h.equals("127.0.0.1:" + port) || h.equals("localhost:" + port) || h.equals("[::1]:" + port);
    }

    /**
     * Whether a change may proceed as far as the browser tells: no {@code Origin} other than this
     * console's own, and not marked cross-site by {@code Sec-Fetch-Site}.
     */
    boolean isSameOrigin(Headers headers) {
        String site = headers.getFirst("Sec-Fetch-Site");
        if (site != null && !site.equals("same-origin") && !site.equals("none")) {
            return false;
        }
        String origin = headers.getFirst("Origin");
        if (origin == null) {
            return true; // not a browser, or an old one: the CSRF token decides
        }
        try {
            URI uri = URI.create(origin);
            String host = headers.getFirst("Host");
            String authority = uri.getHost() + (uri.getPort() == -1 ? "" : ":" + uri.getPort());
            return "http".equals(uri.getScheme()) && authority.equalsIgnoreCase(host) && isOwnHost(host);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static String hmac(byte[] key, String message) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return HexFormat.of().formatHex(mac.doFinal(message.getBytes(StandardCharsets.US_ASCII)));
        } catch (GeneralSecurityException e) {
            // HmacSHA256 is in every JDK: reaching this is a broken runtime, not bad input.
            throw new IllegalStateException("HmacSHA256 failed: " + e, e);
        }
    }
}
