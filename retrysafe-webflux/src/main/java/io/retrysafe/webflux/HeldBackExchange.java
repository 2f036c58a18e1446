package io.retrysafe.webflux;

import java.util.Map;
import org.springframework.core.ResolvableType;
import org.springframework.http.MediaType;
import org.springframework.http.codec.FormHttpMessageReader;
import org.springframework.http.codec.multipart.DefaultPartHttpMessageReader;
import org.springframework.http.codec.multipart.MultipartHttpMessageReader;
import org.springframework.http.codec.multipart.Part;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.util.MultiValueMap;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebExchangeDecorator;
import reactor.core.publisher.Mono;

/**
 * The exchange the handler gets: the request whose body the filter already read, and the response held
 * back. Its form data and multipart data are read from that body: the server's exchange parsed them (once,
 * cached) from the original request, whose body the filter has consumed, and would give the handler none.
 */
final class HeldBackExchange extends ServerWebExchangeDecorator {
    private static final ResolvableType FORM_TYPE = ResolvableType.forClassWithGenerics(MultiValueMap.class,
            String.class, String.class);
    private static final ResolvableType PARTS_TYPE = ResolvableType.forClassWithGenerics(MultiValueMap.class,
            String.class, Part.class);

    private final ServerHttpRequest request;
    private final ServerHttpResponse response;
    private final Mono<MultiValueMap<String, String>> formData;
    private final Mono<MultiValueMap<String, Part>> multipartData;

    HeldBackExchange(ServerWebExchange exchange, ServerHttpRequest request, ServerHttpResponse response,
            int maxBytes) {
        super(exchange);
        this.request = request;
        this.response = response;
        MediaType type = request.getHeaders().getContentType();
        FormHttpMessageReader forms = new FormHttpMessageReader();
        forms.setMaxInMemorySize(maxBytes);
        this.formData = type != null && MediaType.APPLICATION_FORM_URLENCODED.isCompatibleWith(type)
                ? forms.readMono(FORM_TYPE, request, Map.of()).cache() : exchange.getFormData();
        DefaultPartHttpMessageReader parts = new DefaultPartHttpMessageReader();
        parts.setMaxInMemorySize(Math.max(maxBytes, 1));
        this.multipartData = type != null && MediaType.MULTIPART_FORM_DATA.isCompatibleWith(type)
                ? new MultipartHttpMessageReader(parts).readMono(PARTS_TYPE, request, Map.of()).cache()
                : exchange.getMultipartData();
    }

    @Override
    public ServerHttpRequest getRequest() {
        return request;
    }

    @Override
    public ServerHttpResponse getResponse() {
        return response;
    }

    @Override
    public Mono<MultiValueMap<String, String>> getFormData() {
        return formData;
    }

    @Override
    public Mono<MultiValueMap<String, Part>> getMultipartData() {
        return multipartData;
    }
}
