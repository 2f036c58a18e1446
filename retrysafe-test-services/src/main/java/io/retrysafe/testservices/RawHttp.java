package io.retrysafe.testservices;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a plain socket, for the bytes an ordinary client refuses to send (control characters
 * or non-ASCII in a header, unnormalised paths): one request per connection, the answer read to its end.
 */
public final class RawHttp {
    private RawHttp() {
    }

    /** What came back: status, headers (names lower-case, first value of each), the body de-chunked. */
    public record Response(int status, Map<String, String> headers, byte[] body) {
        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        public String text() {
            return new String(body, UTF_8);
        }

        @Override
        public String toString() {
            return status + " " + headers + " " + text();
        }
    }

    /**
     * A request with {@code Host}, {@code Connection: close} and {@code Content-Length} added; the head
     * is sent as ISO-8859-1, so each char below 256 in it goes out as that one byte.
     */
    public static byte[] request(String method, String target, Map<String, String> headers, byte[] body) {
        StringBuilder head = new StringBuilder(method).append(' ').append(target).append(" HTTP/1.1\r\n")
                .append("Host: 127.0.0.1\r\nConnection: close\r\n");
        headers.forEach((name, value) -> head.append(name).append(": ").append(value).append("\r\n"));
        head.append("Content-Length: ").append(body.length).append("\r\n\r\n");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(head.toString().getBytes(ISO_8859_1));
        out.writeBytes(body);
        return out.toByteArray();
    }

    /**
     * A {@code multipart/form-data} body of one text field and one file ({@code application/octet-stream}),
     * framed by {@code boundary}; its content type is {@code multipart/form-data; boundary=<boundary>}.
     */
    public static byte[] multipart(String boundary, String field, String value, String fileField, String fileName,
            byte[] file) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.writeBytes(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + field + "\"\r\n\r\n"
                + value + "\r\n--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + fileField
                + "\"; filename=\"" + fileName + "\"\r\nContent-Type: application/octet-stream\r\n\r\n")
                .getBytes(UTF_8));
        body.writeBytes(file);
        body.writeBytes(("\r\n--" + boundary + "--\r\n").getBytes(UTF_8));
        return body.toByteArray();
    }

    public static Response exchange(int port, byte[] request) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(request);
            socket.getOutputStream().flush();
            return parse(socket.getInputStream().readAllBytes());
        }
    }

    private static Response parse(byte[] all) {
        String text = new String(all, ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            throw new IllegalStateException("no complete response head in: " + text);
        }
        String[] lines = text.substring(0, end).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.putIfAbsent(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
                    lines[i].substring(colon + 1).trim());
        }
        byte[] body = Arrays.copyOfRange(all, end + 4, all.length);
        return new Response(status, headers, "chunked".equalsIgnoreCase(headers.get("transfer-encoding"))
                ? unchunk(body) : body);
    }

    private static byte[] unchunk(byte[] chunked) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String s = new String(chunked, ISO_8859_1);
        int at = 0;
        for (int size; (size = Integer.parseInt(s.substring(at, s.indexOf("\r\n", at)).split(";")[0].trim(), 16)) > 0; ) {
            at = s.indexOf("\r\n", at) + 2;
            out.write(chunked, at, size);
            at += size + 2;
        }
        return out.toByteArray();
    }
}
