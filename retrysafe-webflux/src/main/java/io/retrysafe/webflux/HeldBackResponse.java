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
 * response (uncommitted), the body is copied here, at most {@code maxBytes} of it, as the servlet
 * filter holds it.
 *
 * <p>A body that grows past the bound is never held whole: the status, the headers, the bytes held so far
 * and the rest of the body go to the client as the handler writes them (the real response commits there),
 * so memory stays bounded whatever the body's size. The response is then stored without its body
 * ({@link HttpSemantics#withoutBody}): the handler ran and must not run again, and a replay answers with
 * the original status and headers, an empty body and {@value HttpSemantics#BODY_OMITTED_HEADER}.
 */
final class HeldBackResponse extends ServerHttpResponseDecorator {
    private final int maxBytes;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    /** Bytes the handler wrote, held or sent. */
    private long length;
    /** The buffer that would take the body past the bound: from it on, the body is sent as written. */
    private DataBuffer passedBound;
    /** Past the bound: the body went (or goes) to the client as it is written. */
    private volatile boolean streamed;

    HeldBackResponse(ServerHttpResponse delegate, int maxBytes) {
        super(delegate);
        this.maxBytes = maxBytes;
    }

    /**
     * The buffers are held until one would take the body past the bound; it and the ones after it are a
     * window of their own, sent behind the held bytes on the real response.
     */
    @Override
    public Mono<Void> writeWith(Publisher<? extends DataBuffer> written) {
        if (streamed) {
            return getDelegate().writeWith(Flux.from(written).doOnNext(this::count));
        }
        return Flux.<DataBuffer>from(written)
                .doOnNext(this::hold)
                .windowUntil(buffer -> buffer == passedBound, true)
                .concatMap(window -> window.switchOnFirst((first, buffers) -> first.hasValue()
                        && first.get() == passedBound ? stream(buffers) : buffers.doOnNext(DataBufferUtils::release)
                                .then()))
                .then();
    }

    @Override
    public Mono<Void> writeAndFlushWith(Publisher<? extends Publisher<? extends DataBuffer>> written) {
        return writeWith(Flux.from(written).concatMap(Flux::from));
    }

    @Override
    public Mono<Void> setComplete() {
        return streamed ? getDelegate().setComplete() : Mono.empty();
    }

    /** Copies a buffer while it keeps the body within the bound (the held window releases it); past it, counts it. */
    private void hold(DataBuffer buffer) {
        int n = buffer.readableByteCount();
        synchronized (body) {
            length += n;
            if (streamed) {
                return;
            }
            if ((long) body.size() + n > maxBytes) {
                passedBound = buffer;
                streamed = true;
                return;
            }
            byte[] bytes = new byte[n];
            buffer.read(bytes);
            body.writeBytes(bytes);
        }
    }

    private void count(DataBuffer buffer) {
        synchronized (body) {
            length += buffer.readableByteCount();
        }
    }

    /** The held bytes, then {@code rest}, on the real response; the held bytes are not kept. */
    private Mono<Void> stream(Flux<DataBuffer> rest) {
        ServerHttpResponse real = getDelegate();
        return real.writeWith(Flux.concat(Mono.fromSupplier(() -> {
            synchronized (body) {
                byte[] held = body.toByteArray();
                body.reset();
                return real.bufferFactory().wrap(held);
            }
        }), rest));
    }

    /** Whether the body went past the bound and is sent as written: the real response is committed. */
    boolean isStreamed() {
        return streamed;
    }

    /** What is stored: the status, the allowed headers, the body (or, past the bound, its length). */
    StoredResponse toStored(Set<String> replayedHeaders) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        getDelegate().getHeaders().forEach((name, values) -> {
            if (HttpSemantics.isStored(name, replayedHeaders)) {
                headers.put(name, List.copyOf(values));
            }
        });
        int status = getStatusCode() == null ? 200 : getStatusCode().value();
        synchronized (body) {
            return streamed ? HttpSemantics.withoutBody(status, headers, length)
                    : StoredResponse.of(status, headers, body.toByteArray());
        }
    }

    /** Sends the held-back body on the real response; a body sent as it was written is complete already. */
    Mono<Void> send() {
        if (streamed) {
            return Mono.empty();
        }
        byte[] bytes;
        synchronized (body) {
            bytes = body.toByteArray();
        }
        ServerHttpResponse real = getDelegate();
        real.getHeaders().setContentLength(bytes.length);
        return real.writeWith(Mono.fromSupplier(() -> real.bufferFactory().wrap(bytes)));
    }
}
