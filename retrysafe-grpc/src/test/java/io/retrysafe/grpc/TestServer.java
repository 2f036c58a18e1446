package io.retrysafe.grpc;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.retrysafe.RetrySafe;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** The payments service behind RetrySafe's interceptor, in process or on a loopback port with Netty. */
final class TestServer implements AutoCloseable {
    enum Transport { IN_PROCESS, NETTY }

    static final GrpcIdempotency CONFIG = GrpcIdempotency.custom()
            .method(PaymentsService.PAY.getFullMethodName())
            .methodKeyOptional(PaymentsService.QUOTE.getFullMethodName())
            .method(PaymentsService.WATCH.getFullMethodName())
            .method(PaymentsService.RECEIPT_WRITE_ONLY.getFullMethodName())
            .caller(CallerResolver.context(PaymentsService.CALLER))
            .build();

    private final Server server;
    private final ManagedChannel channel;

    private TestServer(Server server, ManagedChannel channel) {
        this.server = server;
        this.channel = channel;
    }

    static TestServer start(Transport transport, RetrySafe engine) throws IOException {
        var service = ServerInterceptors.intercept(PaymentsService.definition(), PaymentsService.decorations(),
                new RetrySafeServerInterceptor(CONFIG, engine), PaymentsService.authentication());
        if (transport == Transport.IN_PROCESS) {
            String name = InProcessServerBuilder.generateName();
            Server server = InProcessServerBuilder.forName(name).addService(service).build().start();
            return new TestServer(server, InProcessChannelBuilder.forName(name).build());
        }
        Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(service)
                .build().start();
        return new TestServer(server, NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext()
                .build());
    }

    ManagedChannel channel() {
        return channel;
    }

    /** What a client observed of one call. */
    record Reply<T>(Status status, T message, Metadata headers, Metadata trailers) {
        boolean replayed() {
            return "true".equals(trailers.get(GrpcIdempotency.REPLAYED_TRAILER));
        }
    }

    /** Starts a call with the caller and key headers ({@code null} leaves one out) and whatever {@code more} adds. */
    <Q, R> CompletableFuture<Reply<R>> start(MethodDescriptor<Q, R> method, String caller, String key, Q request,
            Consumer<Metadata> more) {
        Metadata headers = new Metadata();
        if (caller != null) {
            headers.put(PaymentsService.CALLER_HEADER, caller);
        }
        if (key != null) {
            headers.put(GrpcIdempotency.KEY_HEADER, key);
        }
        more.accept(headers);
        CompletableFuture<Reply<R>> reply = new CompletableFuture<>();
        ClientCall<Q, R> call = channel.newCall(method, CallOptions.DEFAULT.withDeadlineAfter(60, TimeUnit.SECONDS));
        call.start(new ClientCall.Listener<>() {
            private Metadata received = new Metadata();
            private R message;

            @Override
            public void onHeaders(Metadata h) {
                received = h;
            }

            @Override
            public void onMessage(R m) {
                message = m;
            }

            @Override
            public void onClose(Status status, Metadata trailers) {
                reply.complete(new Reply<>(status, message, received, trailers));
            }
        }, headers);
        call.request(2);
        call.sendMessage(request);
        call.halfClose();
        return reply;
    }

    <Q, R> Reply<R> call(MethodDescriptor<Q, R> method, String caller, String key, Q request) {
        return start(method, caller, key, request, h -> { }).join();
    }

    @Override
    public void close() throws InterruptedException {
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
}
