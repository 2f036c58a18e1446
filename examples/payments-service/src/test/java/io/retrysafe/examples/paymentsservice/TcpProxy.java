package io.retrysafe.examples.paymentsservice;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test only: a TCP proxy on a loopback port that stays the same while the test breaks the path
 * behind it, so that what is behind it (a database, a service) is lost and found again the way a
 * network loses it:
 *
 * <ul>
 * <li>{@link Mode#FORWARD}: bytes go both ways.
 * <li>{@link Mode#DOWN}: every open connection is cut, and every new one is closed as soon as it is
 *     accepted; the target is unreachable.
 * <li>{@link Mode#LOSE_RESPONSES}: a new connection forwards the request, and is cut when the first byte
 *     of the answer comes back: the target did the work, the caller never hears of it.
 * </ul>
 * A connection keeps the mode it was accepted in, except that {@code DOWN} cuts them all.
 */
final class TcpProxy implements AutoCloseable {
    enum Mode {
        FORWARD, DOWN, LOSE_RESPONSES
    }

    private final ServerSocket server;
    private final InetSocketAddress target;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final AtomicInteger lostResponses = new AtomicInteger();
    private volatile Mode mode = Mode.FORWARD;

    TcpProxy(String targetHost, int targetPort) throws IOException {
        this.target = new InetSocketAddress(targetHost, targetPort);
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::accept, "tcp-proxy-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** How many answers were cut in {@link Mode#LOSE_RESPONSES}. */
    int lostResponses() {
        return lostResponses.get();
    }

    void mode(Mode mode) {
        this.mode = mode;
        if (mode == Mode.DOWN) {
            open.forEach(TcpProxy::closeQuietly);
        }
    }

    private void accept() {
        while (!server.isClosed()) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            Mode accepted = mode;
            if (accepted == Mode.DOWN) {
                closeQuietly(client);
                continue;
            }
            Socket upstream = new Socket();
            try {
                upstream.connect(target, 10_000);
            } catch (IOException e) {
                closeQuietly(client);
                closeQuietly(upstream);
                continue;
            }
            open.add(client);
            open.add(upstream);
            pump(client, upstream, false, accepted);
            pump(upstream, client, true, accepted);
        }
    }

    private void pump(Socket from, Socket to, boolean answers, Mode accepted) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    if (answers && accepted == Mode.LOSE_RESPONSES) {
                        lostResponses.incrementAndGet();
                        break;
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (SocketException e) {
                // cut by the other pump, or by DOWN
            } catch (IOException e) {
                // the peer went away
            } finally {
                closeQuietly(from);
                closeQuietly(to);
                open.remove(from);
                open.remove(to);
            }
        }, "tcp-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        open.forEach(TcpProxy::closeQuietly);
    }
}
