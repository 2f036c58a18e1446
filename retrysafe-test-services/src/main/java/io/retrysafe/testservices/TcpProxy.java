package io.retrysafe.testservices;

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
 * A TCP proxy on loopback between a service and its database, which a test uses to
 * {@linkplain #dropAll() reset every connection} (as a failing network or a restarted load balancer
 * would), to {@linkplain #stall stall} them (bytes held back both ways, connections left open, as a
 * congested or partitioned network would), or to {@linkplain #cut() cut} the database off until it is
 * {@linkplain #restore() restored}.
 */
public final class TcpProxy implements AutoCloseable {
    private final ServerSocket server;
    private volatile int targetPort;
    private final Set<Pipe> pipes = ConcurrentHashMap.newKeySet();
    private final Object stallLock = new Object();
    private final AtomicInteger accepted = new AtomicInteger();
    private volatile long stalledUntilNanos;
    private volatile boolean cut;
    private volatile boolean closed;

    /** A proxy to {@code targetPort} on loopback, listening on a free port of its own. */
    public TcpProxy(int targetPort) throws IOException {
        this.targetPort = targetPort;
        this.server = new ServerSocket();
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Thread acceptor = new Thread(this::acceptLoop, "tcp-proxy-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public int port() {
        return server.getLocalPort();
    }

    public int connectionsAccepted() {
        return accepted.get();
    }

    /** Resets every open connection (RST, not FIN: the peer sees "connection reset"). New ones are accepted. */
    public int dropAll() {
        int n = 0;
        for (Pipe pipe : pipes) {
            pipe.reset();
            n++;
        }
        return n;
    }

    /** For {@code millis}, no byte passes in either direction, on open connections and new ones alike. */
    public void stall(long millis) {
        stalledUntilNanos = System.nanoTime() + millis * 1_000_000L;
    }

    /**
     * Until {@link #restore()}, the database cannot be reached: every open connection is reset, and every
     * new one is reset as soon as it is accepted.
     */
    public void cut() {
        cut = true;
        dropAll();
    }

    /**
     * From now on, new connections go to {@code port}, as a virtual address moves to a promoted replica; open
     * connections are reset.
     */
    public void retarget(int port) {
        targetPort = port;
        dropAll();
    }

    /** Ends {@link #cut()}: new connections reach the database again. */
    public void restore() {
        cut = false;
    }

    private void awaitNotStalled() throws InterruptedException {
        long left;
        while ((left = stalledUntilNanos - System.nanoTime()) > 0 && !closed) {
            synchronized (stallLock) {
                stallLock.wait(Math.max(1, left / 1_000_000L));
            }
        }
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                continue;
            }
            accepted.incrementAndGet();
            if (cut) {
                reset(client);
                continue;
            }
            Socket upstream = new Socket();
            try {
                upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 5_000);
            } catch (IOException e) {
                // The database is down: the client sees its connection closed, as it would without the proxy.
                closeQuietly(client);
                closeQuietly(upstream);
                continue;
            }
            Pipe pipe = new Pipe(client, upstream);
            pipes.add(pipe);
            if (cut) {
                pipe.reset(); // cut while it was being connected
                continue;
            }
            pipe.start();
        }
    }

    @Override
    public void close() {
        closed = true;
        closeQuietly(server);
        pipes.forEach(Pipe::reset);
    }

    /** Closes with RST, not FIN: the peer sees "connection reset". */
    private static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0);
        } catch (SocketException ignored) {
            // closed already
        }
        closeQuietly(s);
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // already gone
        }
    }

    /** One proxied connection: a thread per direction. */
    private final class Pipe {
        private final Socket client;
        private final Socket upstream;
        private final AtomicInteger open = new AtomicInteger(2);

        Pipe(Socket client, Socket upstream) {
            this.client = client;
            this.upstream = upstream;
        }

        void start() {
            for (boolean up : new boolean[] {true, false}) {
                Thread t = new Thread(() -> copy(up ? client : upstream, up ? upstream : client),
                        "tcp-proxy-" + (up ? "up" : "down"));
                t.setDaemon(true);
                t.start();
            }
        }

        private void copy(Socket from, Socket to) {
            byte[] buffer = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buffer)) != -1) {
                    awaitNotStalled();
                    out.write(buffer, 0, n);
                    out.flush();
                }
                to.shutdownOutput();
            } catch (IOException | InterruptedException e) {
                reset();
            } finally {
                if (open.decrementAndGet() == 0) {
                    closeQuietly(client);
                    closeQuietly(upstream);
                    pipes.remove(this);
                }
            }
        }

        void reset() {
            TcpProxy.reset(client);
            TcpProxy.reset(upstream);
            pipes.remove(this);
        }
    }
}
