package io.retrysafe.http;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The path a request is matched on: inside the application, percent-decoded (UTF-8), without path
 * parameters ({@code ;x}), dot segments or empty segments. Servers and frameworks dispatch
 * {@code /p%61yments}, {@code /payments;x}, {@code /./payments} and {@code //payments} to the handler of
 * {@code /payments}, so each of them must be protected as {@code /payments} is: a route matched on
 * the raw spelling could be walked around by spelling it differently.
 */
public final class HttpPaths {
    private HttpPaths() {
    }

    /** Normalises a raw path (as sent, before decoding); a trailing '/' is kept, as routes may tell it apart. */
    public static String normalise(String raw) {
        // Nearly every request's path is normal already: it is returned as it is, not rebuilt, on every request.
        return isNormal(raw) ? raw : rebuild(raw);
    }

    /**
     * Whether {@link #normalise} would give the path back unchanged: a leading '/', no escape, path parameter,
     * empty segment (a trailing '/' aside), or dot segment. Read in place, without allocating.
     */
    static boolean isNormal(String raw) {
        int n = raw.length();
        if (n == 0 || raw.charAt(0) != '/') {
            return false;
        }
        int start = 1; // of the current segment
        for (int i = 1; i <= n; i++) {
            char c = i < n ? raw.charAt(i) : '/';
            if (c == '%' || c == ';') {
                return false;
            }
            if (c == '/') {
                int length = i - start;
                boolean dots = length > 0 && length <= 2 && raw.charAt(start) == '.'
                        && (length == 1 || raw.charAt(start + 1) == '.');
                if ((length == 0 && i < n) || dots) {
                    return false;
                }
                start = i + 1;
            }
        }
        return true;
    }

    /** The whole walk: segments decoded, path parameters, dot and empty segments dropped. */
    static String rebuild(String raw) {
        List<String> segments = new ArrayList<>();
        String[] parts = raw.split("/", -1);
        for (String part : parts) {
            int semicolon = part.indexOf(';');
            String segment = decode(semicolon < 0 ? part : part.substring(0, semicolon));
            if (segment.equals("..")) {
                if (!segments.isEmpty()) {
                    segments.remove(segments.size() - 1);
                }
            } else if (!segment.isEmpty() && !segment.equals(".")) {
                segments.add(segment);
            }
        }
        String last = parts[parts.length - 1];
        boolean trailingSlash = !segments.isEmpty() && (last.isEmpty() || last.equals(".") || last.equals(".."));
        return "/" + String.join("/", segments) + (trailingSlash ? "/" : "");
    }

    /**
     * Whether a raw path reads the same to every server: no path parameters ({@code ;}), backslashes, dot or
     * empty segments (a trailing '/' aside), malformed escapes, and no escape of '/', '\\', NUL or a character
     * that needs none ({@code %61} for {@code a}, {@code %2e} for '.'). A proxy forwards only such paths: any
     * other spelling may be dispatched by the service behind it as a path other than the one the proxy matched.
     */
    public static boolean isCanonical(String raw) {
        if (raw.isEmpty() || raw.charAt(0) != '/' || raw.indexOf(';') >= 0 || raw.indexOf('\\') >= 0) {
            return false;
        }
        String[] parts = raw.split("/", -1);
        for (int i = 1; i < parts.length; i++) {
            String part = parts[i];
            if ((part.isEmpty() && i < parts.length - 1) || part.equals(".") || part.equals("..")) {
                return false;
            }
            for (int p = part.indexOf('%'); p >= 0; p = part.indexOf('%', p + 1)) {
                int hi = p + 2 < part.length() ? Character.digit(part.charAt(p + 1), 16) : -1;
                int lo = hi >= 0 ? Character.digit(part.charAt(p + 2), 16) : -1;
                if (lo < 0) {
                    return false;
                }
                char c = (char) (hi << 4 | lo);
                if (c == '/' || c == '\\' || c == 0 || isUnreserved(c)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** RFC 3986's unreserved characters: an escape of one means the same as the character itself. */
    private static boolean isUnreserved(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.'
                || c == '_' || c == '~';
    }

    /** {@code %nn} as UTF-8 bytes; a malformed escape is left as it was (the container refuses such a request). */
    private static String decode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            int hi = c == '%' && i + 2 < s.length() ? Character.digit(s.charAt(i + 1), 16) : -1;
            int lo = hi >= 0 ? Character.digit(s.charAt(i + 2), 16) : -1;
            if (lo >= 0) {
                out.write(hi << 4 | lo);
                i += 2;
            } else {
                out.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
