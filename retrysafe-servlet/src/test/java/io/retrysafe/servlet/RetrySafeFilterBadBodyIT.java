package io.retrysafe.servlet;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.RetrySafe;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.EOFException;
import java.io.IOException;
import java.io.UnsupportedEncodingException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bodies that cannot be read or parsed, found by {@link RetrySafeFilterFuzzIT}: each is refused
 * before the handler runs, with a documented answer, and no exception leaves the filter. Before the
 * fixes, a body cut short threw the container's IOException out of the filter, a form body the
 * container could not parse (Servlet 6.1 throws) was a {@code 500}, and {@code getReader()} with an
 * unknown charset threw an unchecked exception instead of {@link UnsupportedEncodingException}.
 */
class RetrySafeFilterBadBodyIT {
    private static final String KEY = HttpIdempotency.HEADER;

    @TempDir
    static Path baseDir;

    private static EmbeddedTomcat tomcat;
    private static final Queue<Throwable> ESCAPED = new ConcurrentLinkedQueue<>();
    private static final AtomicInteger RUNS = new AtomicInteger();

    @BeforeAll
    static void start() throws Exception {
        RetrySafe engine = RetrySafe.builder(new InMemoryIdempotencyStore()).name("bad-body-it").build();
        HttpIdempotency config = HttpIdempotency.custom()
                .route(IdempotentRoute.of("POST", "/payments").build())
                .scope(ScopeResolver.global("bad-body-it"))
                .build();
        tomcat = EmbeddedTomcat.start(baseDir, context -> {
            EmbeddedTomcat.filter(context, "escapes", new RecordEscapes(), "/*");
            EmbeddedTomcat.filter(context, "cut", new CutBody(), "/*");
            EmbeddedTomcat.filter(context, "retrysafe",
                    new RetrySafeFilter(config, IdempotentExecutor.standalone(engine), engine.listener()), "/*");
            EmbeddedTomcat.servlet(context, "handler", new Handler(), "/*");
        });
    }

    @AfterAll
    static void stop() throws Exception {
        if (tomcat != null) {
            tomcat.close();
        }
    }

    @BeforeEach
    void reset() {
        ESCAPED.clear();
        RUNS.set(0);
    }

    /** A container that leaves the answer to the application (the read fails, nothing else happens): the problem document. */
    @Test
    void aBodyThatCannotBeReadToItsEndIs400IncompleteBodyAndDoesNotRun() throws Exception {
        String response = exchange(request("application/json", "{\"amount\":100}", "X-Cut-After: 5\r\n"), false);

        assertThat(response).startsWith("HTTP/1.1 400 ").contains("\r\nContent-Type: application/problem+json\r\n")
                .contains("\"type\":\"/problems/incomplete-body\"").contains("(Content-Length: 14)");
        assertThat(RUNS).hasValue(0);
        assertThat(ESCAPED).isEmpty();
    }

    /** Tomcat answers a body cut short itself (its read calls sendError(400)); the filter neither runs nor throws. */
    @Test
    void onTomcatABodyCutShortIs400AndDoesNotRun() throws Exception {
        String head = "POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + KEY + ": " + UUID.randomUUID()
                + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"amount\":";

        String response = exchange(head, true);

        assertThat(response).startsWith("HTTP/1.1 400 ");
        assertThat(RUNS).hasValue(0);
        assertThat(ESCAPED).isEmpty();
    }

    @Test
    void aFormBodyTheContainerCannotParseIs400MalformedFormAndDoesNotRun() throws Exception {
        String response = exchange(request("application/x-www-form-urlencoded", "amount=1&memo=%E9%ZZ", ""), false);

        assertThat(response).startsWith("HTTP/1.1 400 ").contains("\r\nContent-Type: application/problem+json\r\n")
                .contains("\"type\":\"/problems/malformed-form\"").doesNotContain("memo");
        assertThat(RUNS).hasValue(0);
        assertThat(ESCAPED).isEmpty();
    }

    @Test
    void aFormBodyCutShortNeverRunsNorThrows() throws Exception {
        String head = "POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + KEY + ": " + UUID.randomUUID()
                + "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\namount=1&me";

        String response = exchange(head, true);

        assertThat(response).as("Tomcat closes without an answer, or answers 400").satisfiesAnyOf(
                r -> assertThat(r).isEmpty(), r -> assertThat(r).startsWith("HTTP/1.1 400 "));
        assertThat(RUNS).hasValue(0);
        assertThat(ESCAPED).isEmpty();
    }

    /** The handler reads the body through getReader(): an unknown charset is the checked exception the API documents. */
    @Test
    void getReaderWithAnUnknownCharsetThrowsUnsupportedEncodingException() throws Exception {
        for (String charset : new String[] {"no-such-charset", "\"utf 8\""}) {
            String response = exchange(request("text/plain; charset=" + charset, "hello", "X-Read: reader\r\n"), false);

            assertThat(response).as(charset).startsWith("HTTP/1.1 415 ").endsWith("UnsupportedEncodingException");
        }
        assertThat(ESCAPED).isEmpty();
    }

    /** As Tomcat's own reader: bytes that are not UTF-8 are an error to the handler, not U+FFFD it cannot tell from the client's. */
    @Test
    void getReaderOnBytesThatAreNotInTheCharsetThrowsMalformedInput() throws Exception {
        byte[] head = ("POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + KEY + ": "
                + UUID.randomUUID() + "\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Length: 4\r\n"
                + "X-Read: reader\r\n\r\n").getBytes(UTF_8);
        byte[] body = {'o', 'k', (byte) 0xC3, (byte) 0x28}; // 0xC3 starts a two-byte sequence; 0x28 cannot continue it
        byte[] request = Arrays.copyOf(head, head.length + body.length);
        System.arraycopy(body, 0, request, head.length, body.length);

        String response = exchange(request, false);

        assertThat(response).startsWith("HTTP/1.1 400 ").endsWith("MalformedInputException");
        assertThat(RUNS).hasValue(0);
        assertThat(ESCAPED).isEmpty();
    }

    // ---- helpers

    private static String request(String contentType, String body, String extraHeaders) {
        return "POST /payments HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + KEY + ": " + UUID.randomUUID()
                + "\r\nContent-Type: " + contentType + "\r\nContent-Length: " + body.getBytes(UTF_8).length + "\r\n"
                + extraHeaders + "\r\n" + body;
    }

    /** One request on its own connection; {@code halfClose} ends the client's side after the bytes, as a client that gave up. */
    private static String exchange(String request, boolean halfClose) throws IOException {
        return exchange(request.getBytes(UTF_8), halfClose);
    }

    private static String exchange(byte[] request, boolean halfClose) throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", tomcat.uri("/").getPort()), 10_000);
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(request);
            socket.getOutputStream().flush();
            if (halfClose) {
                socket.shutdownOutput();
            }
            return new String(socket.getInputStream().readAllBytes(), ISO_8859_1);
        }
    }

    /** Outermost: what leaves the filter chain. */
    static final class RecordEscapes implements Filter {
        @Override
        public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
                throws IOException, ServletException {
            try {
                chain.doFilter(req, res);
            } catch (IOException | ServletException | RuntimeException | Error e) {
                ESCAPED.add(e);
                throw e;
            }
        }
    }

    /** {@code X-Cut-After: n}: the body stream fails after n bytes, as a container does that leaves the answer to the application. */
    static final class CutBody implements Filter {
        @Override
        public void doFilter(ServletRequest req, ServletResponse res, FilterChain chain)
                throws IOException, ServletException {
            HttpServletRequest request = (HttpServletRequest) req;
            String cut = request.getHeader("X-Cut-After");
            if (cut == null) {
                chain.doFilter(req, res);
                return;
            }
            int after = Integer.parseInt(cut);
            ServletInputStream real = request.getInputStream();
            ServletInputStream failing = new ServletInputStream() {
                private int read;

                @Override
                public int read() throws IOException {
                    if (read >= after) {
                        throw new EOFException("the connection ended after " + after + " bytes");
                    }
                    read++;
                    return real.read();
                }

                @Override
                public boolean isFinished() {
                    return false;
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setReadListener(ReadListener listener) {
                    throw new UnsupportedOperationException();
                }
            };
            chain.doFilter(new HttpServletRequestWrapper(request) {
                @Override
                public ServletInputStream getInputStream() {
                    return failing;
                }
            }, res);
        }
    }

    /**
     * Counts its runs; with {@code X-Read} reads through getReader() and answers 415 (unknown charset)
     * or 400 (bytes not in the charset) naming the exception it got.
     */
    static final class Handler extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
            if (req.getHeader("X-Read") != null) {
                try {
                    req.getReader().read(new char[8192]);
                } catch (UnsupportedEncodingException | CharacterCodingException e) {
                    resp.setStatus(e instanceof UnsupportedEncodingException ? 415 : 400);
                    resp.setContentType("text/plain");
                    resp.getOutputStream().write(e.getClass().getSimpleName().getBytes(UTF_8));
                    return;
                }
            }
            req.getInputStream().readAllBytes();
            RUNS.incrementAndGet();
            resp.setStatus(201);
        }
    }
}
