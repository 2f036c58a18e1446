package io.retrysafe.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Stored response headers as text, one {@code name:value} line per value, in order. Backslash and
 * line breaks are escaped so that any value round-trips, even one HTTP would not allow.
 */
public final class HeaderCodec {
    /**
     * Never stored by any front door, whatever is configured (lower case): they carry credentials or per-session
     * state, which a replay must not hand to whoever retries.
     */
    public static final Set<String> NEVER_STORED = Set.of("set-cookie", "set-cookie2", "authorization",
            "proxy-authorization", "www-authenticate", "proxy-authenticate", "cookie");

    private HeaderCodec() {
    }

    public static String encode(Map<String, List<String>> headers) {
        int length = 0;
        for (Map.Entry<String, List<String>> header : headers.entrySet()) {
            for (String value : header.getValue()) {
                length += header.getKey().length() + value.length() + 2;
            }
        }
        // Sized once, for the text without escapes: the builder does not grow (and copy) header by header.
        StringBuilder out = new StringBuilder(length);
        headers.forEach((name, values) -> {
            if (name.indexOf(':') >= 0) {
                throw new IllegalArgumentException("header name must not contain ':', but was " + name);
            }
            for (String value : values) {
                escape(name, out);
                out.append(':');
                escape(value, out);
                out.append('\n');
            }
        });
        return out.toString();
    }

    public static Map<String, List<String>> decode(String text) {
        if (text == null || text.isEmpty()) {
            return Map.of();
        }
        Map<String, List<String>> headers = new LinkedHashMap<>();
        int start = 0;
        while (start < text.length()) {
            int end = text.indexOf('\n', start);
            String line = text.substring(start, end);
            int colon = line.indexOf(':');
            headers.computeIfAbsent(unescape(line.substring(0, colon)), n -> new ArrayList<>())
                    .add(unescape(line.substring(colon + 1)));
            start = end + 1;
        }
        headers.replaceAll((name, values) -> List.copyOf(values));
        return Collections.unmodifiableMap(headers);
    }

    private static void escape(String s, StringBuilder out) {
        if (s.indexOf('\\') < 0 && s.indexOf('\n') < 0 && s.indexOf('\r') < 0) {
            out.append(s);
            return;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                default -> out.append(c);
            }
        }
    }

    private static String unescape(String s) {
        if (s.indexOf('\\') < 0) {
            return s;
        }
        StringBuilder out = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 1 < s.length()) {
                char n = s.charAt(++i);
                out.append(n == 'n' ? '\n' : n == 'r' ? '\r' : n);
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }
}
