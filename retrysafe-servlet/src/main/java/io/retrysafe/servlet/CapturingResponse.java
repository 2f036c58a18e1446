package io.retrysafe.servlet;

import io.retrysafe.StoredResponse;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Holds the handler's response back: the body is buffered and nothing is committed to the client,
 * so that a transactional commit can still fail and be answered with {@code 503} instead, and so
 * that the response can be stored. Headers go to the real response as usual (it stays
 * uncommitted) and are read back from it.
 */
final class CapturingResponse extends HttpServletResponseWrapper {
    static final String BODY_OMITTED_HEADER = "Idempotent-Replay-Body-Omitted";

    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private ServletOutputStream stream;
    private PrintWriter writer;

    CapturingResponse(HttpServletResponse response) {
        super(response);
    }

    @Override
    public ServletOutputStream getOutputStream() {
        if (writer != null) {
            throw new IllegalStateException("getWriter() was already called");
        }
        if (stream == null) {
            stream = new ServletOutputStream() {
                @Override
                public void write(int b) {
                    body.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) {
                    body.write(b, off, len);
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setWriteListener(WriteListener listener) {
                    throw new IllegalStateException("asynchronous writes are not supported on an idempotent route");
                }
            };
        }
        return stream;
    }

    @Override
    public PrintWriter getWriter() {
        if (stream != null) {
            throw new IllegalStateException("getOutputStream() was already called");
        }
        if (writer == null) {
            String enc = getCharacterEncoding();
            Charset cs = enc == null ? StandardCharsets.ISO_8859_1 : Charset.forName(enc);
            // As the container's own getWriter() does: the Content-Type names the charset the bytes are in.
            setCharacterEncoding(cs.name());
            writer = new PrintWriter(new OutputStreamWriter(body, cs));
        }
        return writer;
    }

    /** Nothing reaches the client before the outcome is durable. */
    @Override
    public void flushBuffer() {
        if (writer != null) {
            writer.flush();
        }
    }

    @Override
    public boolean isCommitted() {
        return false;
    }

    @Override
    public void resetBuffer() {
        body.reset();
    }

    @Override
    public void reset() {
        super.reset();
        body.reset();
    }

    /** Recorded as a problem document rather than the container's error page, which would commit the response. */
    @Override
    public void sendError(int sc, String msg) {
        resetBuffer();
        setStatus(sc);
        setContentType(Problem.CONTENT_TYPE);
        StringBuilder json = new StringBuilder("{\"status\":").append(sc);
        if (msg != null) {
            json.append(",\"detail\":");
            Problem.quote(msg, json);
        }
        body.writeBytes(json.append('}').toString().getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void sendError(int sc) {
        sendError(sc, null);
    }

    @Override
    public void sendRedirect(String location) {
        resetBuffer();
        setStatus(302);
        setHeader("Location", location);
    }

    /** Sends the held-back status and body (the headers are on the real response already). */
    void sendHeldBack() throws IOException {
        byte[] b = body();
        HttpServletResponse real = (HttpServletResponse) getResponse();
        real.setStatus(getStatus());
        if (b.length > 0) {
            real.setContentLength(b.length);
            real.getOutputStream().write(b);
        }
    }

    byte[] body() {
        if (writer != null) {
            writer.flush();
        }
        return body.toByteArray();
    }

    /**
     * The response as stored: status, the allow-listed headers, the body. A body over {@code maxBody}
     * is never stored truncated: it is left out, and {@value #BODY_OMITTED_HEADER} tells a replay's
     * client its original length, so that it fetches the resource (its {@code Location}) instead.
     */
    StoredResponse toStored(Set<String> replayedHeaders, int maxBody) {
        byte[] b = body();
        Map<String, List<String>> headers = new LinkedHashMap<>();
        HttpServletResponse real = (HttpServletResponse) getResponse();
        for (String name : real.getHeaderNames()) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (replayedHeaders.contains(lower) && !HttpIdempotency.FORBIDDEN_HEADERS.contains(lower)) {
                headers.put(name, List.copyOf(real.getHeaders(name)));
            }
        }
        if (real.getContentType() != null && replayedHeaders.contains("content-type")) {
            // Containers keep the content type apart from the other headers; read it once, by its own getter.
            headers.keySet().removeIf(n -> n.equalsIgnoreCase("Content-Type"));
            headers.put("Content-Type", List.of(real.getContentType()));
        }
        if (b.length > maxBody) {
            headers.remove("Content-Type");
            headers.put(BODY_OMITTED_HEADER, List.of(Integer.toString(b.length)));
            return StoredResponse.of(getStatus(), headers, new byte[0]);
        }
        return StoredResponse.of(getStatus(), headers, b);
    }
}
