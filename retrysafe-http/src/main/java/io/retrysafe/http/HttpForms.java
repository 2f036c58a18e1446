package io.retrysafe.http;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.IllegalCharsetNameException;
import java.nio.charset.StandardCharsets;
import java.nio.charset.UnsupportedCharsetException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Form bodies as the fingerprint sees them, whatever the HTTP stack: the fields of an
 * {@code application/x-www-form-urlencoded} body sorted by name (values of one name in the order sent),
 * and the parts of a {@code multipart/form-data} body ordered by name, each with its file name, content
 * type and content, without the boundary. Two spellings of one form (fields in another order, other
 * percent-encoding, a new boundary) are then the same request.
 *
 * <p>The servlet filter gets the fields and parts from its container, which parses them; a stack that
 * hands the body over raw (WebFlux, Jakarta REST, the gateway) parses the fields with {@link #parse}, as a
 * servlet container does: the query's fields first (UTF-8), then the body's, in the body's charset
 * ({@link #fingerprinted} does both steps).
 */
public final class HttpForms {
    public static final String URL_ENCODED = "application/x-www-form-urlencoded";
    public static final String MULTIPART = "multipart/form-data";

    private HttpForms() {
    }

    /** Whether a body of this content type is an URL-encoded form. */
    public static boolean isUrlEncoded(String contentType) {
        return contentType != null && contentType.toLowerCase(Locale.ROOT).startsWith(URL_ENCODED);
    }

    /** Whether a body of this content type is a multipart form. */
    public static boolean isMultipart(String contentType) {
        return contentType != null && contentType.toLowerCase(Locale.ROOT).startsWith(MULTIPART);
    }

    /** The fields, sorted by name, each length-prefixed so that no name or value can pass for another. */
    public static byte[] canonical(Map<String, List<String>> fields) {
        StringBuilder out = new StringBuilder();
        new TreeMap<>(fields).forEach((name, values) -> {
            for (String v : values) {
                out.append(name.length()).append(':').append(name).append('=').append(v.length()).append(':').append(v)
                        .append('\n');
            }
        });
        return out.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The bytes a body read as sent is fingerprinted with: an URL-encoded form's fields (the query's and the
     * body's, {@linkplain #parse parsed} as a servlet container parses them) in the {@linkplain #canonical
     * canonical} form, so that it fingerprints as a container's parameters would; any other body as it is.
     *
     * @throws MalformedFormException for a form {@link #parse} refuses
     */
    public static byte[] fingerprinted(String rawQuery, byte[] body, String contentType) {
        return isUrlEncoded(contentType) ? canonical(parse(rawQuery, body, contentType)) : body;
    }

    /**
     * The fields of a query and an URL-encoded body, as a servlet container gives them: the query's first,
     * then the body's, each decoded ({@code +} is a space, {@code %nn} a byte), the query's bytes as UTF-8,
     * the body's in the charset of {@code contentType} (UTF-8 without one).
     *
     * @throws MalformedFormException for a bad {@code %nn}, bytes invalid in the charset, or a charset this
     *     runtime does not know
     */
    public static Map<String, List<String>> parse(String rawQuery, byte[] body, String contentType) {
        Charset charset = charset(contentType);
        Map<String, List<String>> fields = new LinkedHashMap<>();
        if (rawQuery != null) {
            fields(rawQuery.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8, fields);
        }
        fields(body, charset, fields);
        return fields;
    }

    private static void fields(byte[] raw, Charset charset, Map<String, List<String>> fields) {
        int start = 0;
        while (start <= raw.length) {
            int end = indexOf(raw, (byte) '&', start);
            int eq = indexOf(raw, (byte) '=', start);
            int nameEnd = eq < end ? eq : end;
            if (nameEnd > start) { // a field without a name is skipped, as containers skip it
                String name = decode(raw, start, nameEnd, charset);
                String value = eq < end ? decode(raw, eq + 1, end, charset) : "";
                fields.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
            }
            start = end + 1;
        }
    }

    private static int indexOf(byte[] raw, byte b, int from) {
        for (int i = from; i < raw.length; i++) {
            if (raw[i] == b) {
                return i;
            }
        }
        return raw.length;
    }

    private static String decode(byte[] raw, int from, int to, Charset charset) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(to - from);
        for (int i = from; i < to; i++) {
            byte b = raw[i];
            if (b == '+') {
                out.write(' ');
            } else if (b == '%') {
                int hi = i + 2 < to ? Character.digit(raw[i + 1], 16) : -1;
                int lo = hi >= 0 ? Character.digit(raw[i + 2], 16) : -1;
                if (lo < 0) {
                    throw new MalformedFormException("the form has a '%' that is not followed by two hex digits");
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else {
                out.write(b);
            }
        }
        try {
            return charset.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(out.toByteArray()))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new MalformedFormException("the form has bytes that are not valid " + charset.name());
        }
    }

    /** The {@code charset} parameter of a content type, UTF-8 without one. */
    private static Charset charset(String contentType) {
        if (contentType != null) {
            for (String parameter : contentType.split(";")) {
                int eq = parameter.indexOf('=');
                if (eq > 0 && parameter.substring(0, eq).trim().equalsIgnoreCase("charset")) {
                    String name = parameter.substring(eq + 1).trim().replace("\"", "");
                    try {
                        return Charset.forName(name);
                    } catch (IllegalCharsetNameException | UnsupportedCharsetException e) {
                        throw new MalformedFormException("the form body's charset is not one this server can decode");
                    }
                }
            }
        }
        return StandardCharsets.UTF_8;
    }

    /**
     * The canonical bytes of a multipart body: add its parts ordered by name (a stable sort: parts of one
     * name keep their order), each as {@link #part} and then its {@link #content}.
     */
    public static final class Parts {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        /** A part's name, file name and content type, each null when absent. */
        public Parts part(String name, String fileName, String contentType) {
            field(name);
            field(fileName);
            field(contentType);
            return this;
        }

        /** The content of the part added last. */
        public Parts content(byte[] content) {
            out.writeBytes((content.length + ":").getBytes(StandardCharsets.US_ASCII));
            out.writeBytes(content);
            out.write('\n');
            return this;
        }

        /** The bytes written so far. */
        public int size() {
            return out.size();
        }

        public byte[] toByteArray() {
            return out.toByteArray();
        }

        /** Length-prefixed, so that no field can pass for the next; absent ({@code -}) apart from empty ({@code 0:}). */
        private void field(String value) {
            if (value == null) {
                out.write('-');
            } else {
                byte[] b = value.getBytes(StandardCharsets.UTF_8);
                out.writeBytes((b.length + ":").getBytes(StandardCharsets.US_ASCII));
                out.writeBytes(b);
            }
            out.write('\n');
        }
    }

    /** A form body that cannot be parsed: its message says why, and never quotes the body. */
    public static final class MalformedFormException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        public MalformedFormException(String message) {
            super(message);
        }
    }
}
