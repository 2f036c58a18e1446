package io.retrysafe.servlet;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.InputStreamReader;
import java.io.UnsupportedEncodingException;
import java.nio.charset.Charset;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** The request with its body read once by the filter (to fingerprint it) and served again, unchanged, to the handler. */
final class BufferedRequest extends HttpServletRequestWrapper {
    private final byte[] body;

    BufferedRequest(HttpServletRequest request, byte[] body) {
        super(request);
        this.body = body;
    }

    @Override
    public ServletInputStream getInputStream() {
        ByteArrayInputStream in = new ByteArrayInputStream(body);
        return new ServletInputStream() {
            @Override
            public int read() {
                return in.read();
            }

            @Override
            public int read(byte[] b, int off, int len) {
                return in.read(b, off, len);
            }

            @Override
            public boolean isFinished() {
                return in.available() == 0;
            }

            @Override
            public boolean isReady() {
                return true;
            }

            @Override
            public void setReadListener(ReadListener listener) {
                throw new IllegalStateException("asynchronous reads are not supported on an idempotent route");
            }
        };
    }

    /**
     * The body decoded with the request's charset, UTF-8 without one. A charset the runtime does not
     * know, or a malformed name, is the {@link UnsupportedEncodingException} that
     * {@link jakarta.servlet.ServletRequest#getReader()} documents, as the container itself throws:
     * never an unchecked exception that a handler written against the API would not expect. Bytes
     * that are not valid in the charset make a read throw
     * {@link java.nio.charset.MalformedInputException}, as Tomcat's own reader does, rather than
     * reach the handler as replacement characters it cannot tell from what the client sent.
     */
    @Override
    public BufferedReader getReader() throws UnsupportedEncodingException {
        String enc = getCharacterEncoding();
        Charset cs;
        try {
            cs = enc == null ? StandardCharsets.UTF_8 : Charset.forName(enc);
        } catch (IllegalArgumentException e) { // IllegalCharsetNameException, UnsupportedCharsetException
            UnsupportedEncodingException unsupported = new UnsupportedEncodingException(enc);
            unsupported.initCause(e);
            throw unsupported;
        }
        return new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), cs.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)));
    }

    @Override
    public int getContentLength() {
        return body.length;
    }

    @Override
    public long getContentLengthLong() {
        return body.length;
    }
}
