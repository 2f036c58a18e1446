package io.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CountDownLatch;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.junit.jupiter.api.Test;

class AccessLogTest {

    @Test
    void aKeyIsLoggedAsItsDigestNeverRaw() {
        String key = "4f6c2d8e-payment-of-order-1234";

        assertThat(AccessLog.digest(key)).isEqualTo(IdempotencyKey.of("access-log", key).digest())
                .hasSize(12).doesNotContain("4f6c2d8e").doesNotContain("1234");
        assertThat(AccessLog.digest(key)).as("stable for one key").isEqualTo(AccessLog.digest(key));
        assertThat(AccessLog.digest(null)).isEqualTo("-");
        assertThat(AccessLog.digest("")).isEqualTo("invalid");
    }

    @Test
    void requestsAreAnsweredWhileStandardOutputIsStuckAndTheirLinesArePrintedOnceItMovesAgain() throws Exception {
        CountDownLatch unstuck = new CountDownLatch(1);
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        PrintStream stuck = new PrintStream(new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                try {
                    unstuck.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException(e);
                }
                synchronized (printed) {
                    printed.write(b, off, len);
                }
            }
        }, false, StandardCharsets.UTF_8);
        AccessLog log = new AccessLog(stuck);
        Server server = new Server(0);
        ServletContextHandler context = new ServletContextHandler("/");
        context.addFilter(new FilterHolder(log), "/*", EnumSet.of(DispatcherType.REQUEST));
        context.addServlet(new ServletHolder(new HttpServlet() {
            @Override
            protected void service(HttpServletRequest request, HttpServletResponse response) {
                response.setStatus(201);
            }
        }), "/*");
        server.setHandler(context);
        server.start();
        try {
            int port = ((ServerConnector) server.getConnectors()[0]).getLocalPort();
            HttpClient client = HttpClient.newHttpClient();
            for (int i = 0; i < 3; i++) {
                HttpResponse<Void> answer = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                        + "/payments/" + i)).POST(HttpRequest.BodyPublishers.noBody())
                        // A bound on a request that would otherwise wait for the stuck stream forever, not a speed check.
                        .timeout(Duration.ofSeconds(30)).build(),
                        HttpResponse.BodyHandlers.discarding());
                assertThat(answer.statusCode()).as("answered while standard output is stuck").isEqualTo(201);
            }
            unstuck.countDown();
        } finally {
            server.stop();
        }
        String lines;
        synchronized (printed) {
            lines = printed.toString(StandardCharsets.UTF_8);
        }
        assertThat(lines.lines()).as("stopping prints every line queued").hasSize(3)
                .allMatch(l -> l.matches("\\S+ 127\\.0\\.0\\.1 POST /payments/\\d 201 \\d+ms key=- replayed=false"));
    }
}
