package io.retrysafe.webflux;

import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpSemantics;
import java.io.ByteArrayOutputStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The handler's response, held back until its outcome is durable: status and headers go to the real
 * response (uncommitted), the body is copied here, at most {@code maxBytes} of it. A body over the
 * bound fails the handler's write with {@link ResponseTooLargeException}: it is neither sent nor stored.
 */
final class HeldBackResponse extends ServerHttpResponseDecorator {
    private final int maxBytes;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();

    HeldBackResponse(ServerHttpResponse delegate, int maxBytes) {
        super(delegate);
        this.maxBytes = maxBytes;
    }

    @Override
    public Mono<Void> writeWith(Publisher<? extends DataBuffer> written) {
        return Flux.from(written).doOnNext(this::take).then();
    }

    @Override
    public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> written) {
        return writeWith(Flux.from(written).concatMap(Flux::from));
    }

    @Override
    public Mono<Void> setComplete() {
        return Mono.empty();
    }

    private void take(DataBuffer buffer) {
        try {
            int n = buffer.readableByteCount();
            if ((long) body.size() + n > maxBytes) {
                throw new ResponseTooLargeException(maxBytes);
            }
            byte[] bytes = new byte[n];
            buffer.read(bytes);
            synchronized (body) {
                body.writeBytes(bytes);
            }
        } finally {
            DataBufferUtils.release(buffer);
        }
    }

    /** What is stored: the status, the allowed headers, the body. */
    StoredResponse toStored(Set<String> replayedHeaders) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        getDelegate().getHeaders().forEach((name, values) -> {
            if (HttpSemantics.isStored(name, replayedHeaders)) {
                headers.put(name, List.copyOf(values));
            }
        });
        int status = getStatusCode() == null ? 200 : getStatusCode().value();
        synchronized (body) {
            return StoredResponse.of(status, headers, body.toByteArray());
        }
    }

    /** Sends the held-back body on the real response. */
    Mono<Void> send() {
        byte[] bytes;
        synchronized (body) {
            bytes = body.toByteArray();
        }
        ServerHttpResponse real = getDelegate();
        real.getHeaders().setContentLength(bytes.length);
        return real.writeWith(Mono.fromSupplier(() -> real.bufferFactory().wrap(bytes)));
    }

    /** The handler wrote more than the bound allows to hold back. */
    static final class ResponseTooLargeException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ResponseTooLargeException(int maxBytes) {
            super("the response body is over the " + maxBytes + " bytes held back for storage");
        }
    }
}
