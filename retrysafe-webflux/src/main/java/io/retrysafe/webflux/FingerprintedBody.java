package io.retrysafe.webflux;

import io.retrysafe.http.HttpForms;
import io.retrysafe.http.HttpForms.MalformedFormException;
import java.util.Comparator;
import java.util.Map;
import org.springframework.core.ResolvableType;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.codec.multipart.DefaultPartHttpMessageReader;
import org.springframework.http.codec.multipart.FilePart;
import org.springframework.http.codec.multipart.Part;
import org.springframework.http.server.reactive.ServerHttpRequest;
import reactor.core.publisher.Mono;

/**
 * The content type and body a request is fingerprinted with, as the servlet filter fingerprints them
 * ({@link HttpForms}): an URL-encoded form as its sorted fields (the query's and the body's, as a servlet
 * container gives them), a multipart form as its parts ordered by name without the boundary, anything
 * else as its bytes. The handler still reads the body as it was sent.
 *
 * @param contentType the content type fingerprinted (a multipart form's without its boundary)
 * @param body the bytes fingerprinted
 */
record FingerprintedBody(String contentType, byte[] body) {

    /**
     * @param request the request, whose body reads {@code body} again
     * @param body the request's body, already read and within {@code maxBytes}
     * @return the fingerprinted body, or a {@link MalformedFormException} for a form that cannot be parsed
     */
    static Mono<FingerprintedBody> of(ServerHttpRequest request, byte[] body, int maxBytes) {
        String contentType = request.getHeaders().getFirst(HttpHeaders.CONTENT_TYPE);
        if (HttpForms.isUrlEncoded(contentType)) {
            return Mono.fromCallable(() -> new FingerprintedBody(contentType,
                    HttpForms.fingerprinted(request.getURI().getRawQuery(), body, contentType)));
        }
        if (HttpForms.isMultipart(contentType)) {
            return parts(request, maxBytes).map(parts -> new FingerprintedBody(HttpForms.MULTIPART, parts));
        }
        return Mono.just(new FingerprintedBody(contentType, body));
    }

    /** The parts, parsed in memory (the body is within the bound), in the canonical form, ordered by name. */
    private static Mono<byte[]> parts(ServerHttpRequest request, int maxBytes) {
        DefaultPartHttpMessageReader reader = new DefaultPartHttpMessageReader();
        reader.setMaxInMemorySize(Math.max(maxBytes, 1));
        return reader.read(ResolvableType.forClass(Part.class), request, Map.of())
                .concatMap(part -> DataBufferUtils.join(part.content()).map(FingerprintedBody::bytes)
                        .defaultIfEmpty(new byte[0]).map(content -> new ParsedPart(part, content)))
                .collectSortedList(Comparator.comparing(ParsedPart::name)) // stable: one name keeps its order
                .map(parts -> {
                    HttpForms.Parts out = new HttpForms.Parts();
                    for (ParsedPart p : parts) {
                        out.part(p.name(), p.fileName(), p.contentType()).content(p.content());
                    }
                    return out.toByteArray();
                })
                .onErrorMap(e -> !(e instanceof MalformedFormException),
                        e -> new MalformedFormException("the multipart body could not be parsed"));
    }

    /** A buffer's bytes; the buffer is released. */
    static byte[] bytes(DataBuffer buffer) {
        try {
            byte[] bytes = new byte[buffer.readableByteCount()];
            buffer.read(bytes);
            return bytes;
        } finally {
            DataBufferUtils.release(buffer);
        }
    }

    private record ParsedPart(String name, String fileName, String contentType, byte[] content) {
        ParsedPart(Part part, byte[] content) {
            this(part.name(), part instanceof FilePart file ? file.filename() : null,
                    part.headers().getFirst(HttpHeaders.CONTENT_TYPE), content);
        }
    }
}
