package io.retrysafe.servlet;

import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpSemantics;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.Cookie;
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
import java.util.function.Supplier;

/**
 * Holds the handler's response back: the body is buffered and nothing is committed to the client,
 * so that a transactional commit can still fail and be answered with {@code 503} instead, and so
 * that the response can be stored. Headers go to the real response as usual (it stays
 * uncommitted) and are read back from it.
 *
 * <p>The buffer is bounded by the largest body stored for replay: a body that grows past it is never
 * held whole. The status, the buffered bytes and everything written after them go straight to the
 * client, and the response is stored without its body ({@value #BODY_OMITTED_HEADER}).
 */
final class CapturingResponse extends HttpServletResponseWrapper {
    static final String BODY_OMITTED_HEADER = HttpSemantics.BODY_OMITTED_HEADER;

    private final int maxBody;
    /** Sized so that a typical JSON answer fits without growing (each growth is a copy). */
    private ByteArrayOutputStream body = new ByteArrayOutputStream(256);
    /**
     * The held body as one array, once taken, until it changes: what is stored and what is sent share it, and
     * neither writes to it (a stored response copies it in).
     */
    private byte[] taken;
    /** Bytes the handler wrote, buffered or sent. */
    private long length;
    /** Past the bound: the body goes to the client as it is written. */
    private ServletOutputStream passThrough;
    /** What getOutputStream() returns, and what getWriter() encodes into. */
    private final ServletOutputStream sink = new ServletOutputStream() {
        @Override
        public void write(int b) throws IOException {
            append(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            append(b, off, len);
        }

        @Override
        public void flush() throws IOException {
            if (passThrough != null) {
                passThrough.flush();
            }
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
    private boolean streamUsed;
    private PrintWriter writer;
    private final boolean includeErrorMessages;
    /** The filter answered in the handler's place: what the handler does from then on reaches nobody. */
    private boolean detached;

    CapturingResponse(HttpServletResponse response, int maxBody, boolean includeErrorMessages) {
        super(response);
        this.maxBody = maxBody;
        this.includeErrorMessages = includeErrorMessages;
    }

    private void append(byte[] b, int off, int len) throws IOException {
        length += len;
        if (passThrough == null && body.size() + (long) len <= maxBody) {
            taken = null;
            body.write(b, off, len);
            return;
        }
        if (passThrough == null) {
            synchronized (this) {
                if (detached) {
                    throw new IOException("the filter answered in the handler's place; this body is dropped");
                }
                // Over the bound: send what is held, and stop holding. The real response commits here.
                HttpServletResponse real = (HttpServletResponse) getResponse();
                real.setStatus(getStatus());
                passThrough = real.getOutputStream();
                body.writeTo(passThrough);
                body = null;
            }
        }
        passThrough.write(b, off, len);
    }

    /**
     * Cuts the handler off the real response, which the filter then answers itself. An asynchronous handler may
     * still be setting its status and headers on a thread of its own: each change to the real response is made
     * under this object's lock, so none is under way once this returns and none is made after it.
     */
    synchronized void detach() {
        detached = true;
    }

    @Override
    public synchronized void setStatus(int sc) {
        if (!detached) {
            super.setStatus(sc);
        }
    }

    @Override
    public synchronized void setHeader(String name, String value) {
        if (!detached) {
            super.setHeader(name, value);
        }
    }

    @Override
    public synchronized void addHeader(String name, String value) {
        if (!detached) {
            super.addHeader(name, value);
        }
    }

    @Override
    public synchronized void setIntHeader(String name, int value) {
        if (!detached) {
            super.setIntHeader(name, value);
        }
    }

    @Override
    public synchronized void addIntHeader(String name, int value) {
        if (!detached) {
            super.addIntHeader(name, value);
        }
    }

    @Override
    public synchronized void setDateHeader(String name, long date) {
        if (!detached) {
            super.setDateHeader(name, date);
        }
    }

    @Override
    public synchronized void addDateHeader(String name, long date) {
        if (!detached) {
            super.addDateHeader(name, date);
        }
    }

    @Override
    public synchronized void addCookie(Cookie cookie) {
        if (!detached) {
            super.addCookie(cookie);
        }
    }

    @Override
    public synchronized void setContentType(String type) {
        if (!detached) {
            super.setContentType(type);
        }
    }

    @Override
    public synchronized void setCharacterEncoding(String charset) {
        if (!detached) {
            super.setCharacterEncoding(charset);
        }
    }

    /** The Servlet 6.1 form (not marked @Override, as the sendRedirect forms below): the wrapper's own delegates. */
    public void setCharacterEncoding(Charset charset) {
        setCharacterEncoding(charset.name());
    }

    @Override
    public synchronized void setContentLength(int len) {
        if (!detached) {
            super.setContentLength(len);
        }
    }

    @Override
    public synchronized void setContentLengthLong(long len) {
        if (!detached) {
            super.setContentLengthLong(len);
        }
    }

    @Override
    public synchronized void setLocale(Locale locale) {
        if (!detached) {
            super.setLocale(locale);
        }
    }

    @Override
    public synchronized void setTrailerFields(Supplier<Map<String, String>> supplier) {
        if (!detached) {
            super.setTrailerFields(supplier);
        }
    }

    @Override
    public ServletOutputStream getOutputStream() {
        if (writer != null) {
            throw new IllegalStateException("getWriter() was already called");
        }
        streamUsed = true;
        return sink;
    }

    @Override
    public PrintWriter getWriter() {
        if (streamUsed) {
            throw new IllegalStateException("getOutputStream() was already called");
        }
        if (writer == null) {
            String enc = getCharacterEncoding();
            Charset cs = enc == null ? StandardCharsets.ISO_8859_1 : Charset.forName(enc);
            // As the container's own getWriter() does: the Content-Type names the charset the bytes are in.
            setCharacterEncoding(cs.name());
            writer = new PrintWriter(new OutputStreamWriter(sink, cs));
        }
        return writer;
    }

    /** Nothing reaches the client before the outcome is durable, unless the body outgrew the bound. */
    @Override
    public void flushBuffer() throws IOException {
        if (writer != null) {
            writer.flush();
        }
        if (passThrough != null) {
            passThrough.flush();
        }
    }

    @Override
    public boolean isCommitted() {
        return passThrough != null;
    }

    @Override
    public void resetBuffer() {
        requireHeldBack();
        if (writer != null) {
            writer.flush(); // what the writer still holds is part of the buffer being dropped
        }
        body.reset();
        taken = null;
        length = 0;
    }

    @Override
    public void reset() {
        requireHeldBack();
        synchronized (this) {
            if (!detached) {
                super.reset();
            }
        }
        resetBuffer();
    }

    private void requireHeldBack() {
        if (passThrough != null) {
            throw new IllegalStateException("the response is committed: its body outgrew the bound of " + maxBody
                    + " bytes held for replay, and was sent");
        }
    }

    /**
     * Recorded as a problem document ({@code about:blank}, the status's reason as title) rather than the
     * container's error page, which would commit the response. The message is left out unless the
     * application shows error messages ({@link HttpIdempotency#includeErrorMessages()}): it is stored and
     * replayed with the rest, and it often says what a client should not read (a host, a query).
     */
    @Override
    public void sendError(int sc, String msg) {
        resetBuffer();
        setStatus(sc);
        setContentType(Problem.CONTENT_TYPE);
        StringBuilder json = new StringBuilder("{\"type\":\"about:blank\"");
        String reason = reasonPhrase(sc);
        if (reason != null) {
            json.append(",\"title\":\"").append(reason).append('"');
        }
        json.append(",\"status\":").append(sc);
        if (msg != null && includeErrorMessages) {
            json.append(",\"detail\":");
            Problem.quote(msg, json);
        }
        byte[] problem = json.append('}').toString().getBytes(StandardCharsets.UTF_8);
        body.writeBytes(problem);
        taken = null;
        length = problem.length;
    }

    @Override
    public void sendError(int sc) {
        sendError(sc, null);
    }

    @Override
    public void sendRedirect(String location) {
        sendRedirect(location, SC_FOUND, true);
    }

    // The Servlet 6.1 forms. Not marked @Override: on Servlet 6.0 (Tomcat 10.1) they do not exist, and the
    // class must compile there too. On 6.1 they override the wrapper's, which would commit the real response.

    public void sendRedirect(String location, int sc) {
        sendRedirect(location, sc, true);
    }

    public void sendRedirect(String location, boolean clearBuffer) {
        sendRedirect(location, SC_FOUND, clearBuffer);
    }

    /** Recorded, not sent: status and {@code Location}; the body so far is dropped when {@code clearBuffer}. */
    public void sendRedirect(String location, int sc, boolean clearBuffer) {
        if (clearBuffer) {
            resetBuffer();
        }
        setStatus(sc);
        setHeader("Location", location);
    }

    /** Sends the held-back status and body (the headers are on the real response already). */
    void sendHeldBack() throws IOException {
        if (passThrough != null) {
            flushBuffer();
            return;
        }
        byte[] b = body();
        HttpServletResponse real = (HttpServletResponse) getResponse();
        real.setStatus(getStatus());
        if (b.length > 0) {
            real.setContentLength(b.length);
            real.getOutputStream().write(b);
        }
    }

    private static String reasonPhrase(int status) {
        return switch (status) {
            case 400 -> "Bad Request";
            case 401 -> "Unauthorized";
            case 402 -> "Payment Required";
            case 403 -> "Forbidden";
            case 404 -> "Not Found";
            case 405 -> "Method Not Allowed";
            case 406 -> "Not Acceptable";
            case 409 -> "Conflict";
            case 410 -> "Gone";
            case 412 -> "Precondition Failed";
            case 413 -> "Content Too Large";
            case 415 -> "Unsupported Media Type";
            case 422 -> "Unprocessable Content";
            case 428 -> "Precondition Required";
            case 429 -> "Too Many Requests";
            case 500 -> "Internal Server Error";
            case 501 -> "Not Implemented";
            case 502 -> "Bad Gateway";
            case 503 -> "Service Unavailable";
            case 504 -> "Gateway Timeout";
            default -> null;
        };
    }

    /** The held body; not to be written to. */
    byte[] body() {
        if (writer != null) {
            writer.flush();
        }
        if (taken == null) {
            taken = body.toByteArray();
        }
        return taken;
    }

    /**
     * The response as stored: status, the allow-listed headers, the body. A body over the bound
     * is never stored truncated: it is left out, and {@value #BODY_OMITTED_HEADER} tells a replay's
     * client its original length, so that it fetches the resource (its {@code Location}) instead.
     */
    StoredResponse toStored(Set<String> replayedHeaders) {
        if (writer != null) {
            writer.flush(); // first: what it holds may take the body past the bound
        }
        Map<String, List<String>> headers = new LinkedHashMap<>();
        HttpServletResponse real = (HttpServletResponse) getResponse();
        for (String name : real.getHeaderNames()) {
            if (HttpSemantics.isStored(name, replayedHeaders)) {
                headers.put(name, List.copyOf(real.getHeaders(name)));
            }
        }
        if (real.getContentType() != null && replayedHeaders.contains("content-type")) {
            // Containers keep the content type apart from the other headers; read it once, by its own getter.
            headers.keySet().removeIf(n -> n.equalsIgnoreCase("Content-Type"));
            headers.put("Content-Type", List.of(real.getContentType()));
        }
        if (passThrough != null) {
            return HttpSemantics.withoutBody(getStatus(), headers, length);
        }
        return StoredResponse.of(getStatus(), headers, body());
    }
}
