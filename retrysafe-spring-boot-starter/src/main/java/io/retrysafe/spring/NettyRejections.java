package io.retrysafe.spring;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import io.retrysafe.InvalidKeyException;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.spi.RetrySafeListener;
import io.retrysafe.webflux.WebFluxIdempotency;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import reactor.netty.NettyPipeline;
import reactor.netty.http.server.HttpServer;

/**
 * Reactor Netty's answer to a request its decoder refused, before any filter ran (a control character in a
 * header is an empty {@code 400}): on a protected route, the WebFlux filter's problem instead, as the servlet
 * side answers what Tomcat refuses. The invalid-key problem when the refused header is {@code Idempotency-Key},
 * else {@link HttpSemantics#rejected}. Everything else, and a head too large ({@code 413}, {@code 431}), is
 * answered as Reactor Netty would.
 */
final class NettyRejections {
    private static final String NAME = "retrysafe.rejectedRequests";
    /** How Netty names the header whose validation failed; its value is not quoted, and never logged here. */
    private static final Pattern REFUSED_HEADER = Pattern.compile("Validation failed for header '([^']*)'");

    private final WebFluxIdempotency config;
    private final RetrySafeListener listener;
    private final String basePath;
    private final Handler handler = new Handler();

    /** @param basePath {@code spring.webflux.base-path}, which routes leave out; null for none */
    NettyRejections(WebFluxIdempotency config, RetrySafeListener listener, String basePath) {
        this.config = config;
        this.listener = listener;
        this.basePath = basePath == null || basePath.isEmpty() || basePath.equals("/") ? null
                : HttpPaths.normalise(basePath);
    }

    /** Puts the handler between the HTTP/1.1 decoder and Reactor Netty's, on every connection that has both. */
    HttpServer install(HttpServer server) {
        return server.doOnChannelInit((observer, channel, remote) -> {
            if (channel.pipeline().get(NettyPipeline.HttpTrafficHandler) != null) {
                channel.pipeline().addBefore(NettyPipeline.HttpTrafficHandler, NAME, handler);
            }
        });
    }

    /** The problem for a refused request, or null for one to leave to Reactor Netty. */
    HttpAnswer answer(HttpRequest request) {
        Throwable cause = request.decoderResult().cause();
        if (cause instanceof TooLongFrameException) {
            return null;
        }
        String path = HttpPaths.normalise(new QueryStringDecoder(request.uri()).rawPath());
        if (basePath != null) {
            if (!path.startsWith(basePath + "/") && !path.equals(basePath)) {
                return null;
            }
            path = path.substring(basePath.length());
        }
        if (config.settings().route(request.method().name(), path.isEmpty() ? "/" : path) == null) {
            return null;
        }
        Matcher refused = REFUSED_HEADER.matcher(String.valueOf(cause.getMessage()));
        if (refused.find() && refused.group(1).equalsIgnoreCase(HttpSemantics.KEY_HEADER)) {
            // The decoder refuses only bytes no field value may hold: control characters.
            InvalidKeyException e = new InvalidKeyException(InvalidKeyException.Rule.NOT_PRINTABLE_ASCII,
                    "idempotency key must be printable ASCII (0x20-0x7E), but has a control character");
            listener.onInvalidKey(e);
            return HttpSemantics.keyRefused(e);
        }
        // The headers before the refused one were read: a key among them that breaks a rule is still invalid-key.
        return HttpSemantics.rejected(config.keyRules(), request.headers().getAll(HttpSemantics.KEY_HEADER),
                listener);
    }

    @ChannelHandler.Sharable
    private final class Handler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            HttpAnswer answer = msg instanceof HttpRequest request && request.decoderResult().isFailure()
                    ? answer(request) : null;
            if (answer == null) {
                ctx.fireChannelRead(msg);
                return;
            }
            ReferenceCountUtil.release(msg);
            byte[] body = answer.body();
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                    HttpResponseStatus.valueOf(answer.status()), Unpooled.wrappedBuffer(body));
            answer.headers().forEach((name, values) -> response.headers().add(name, values));
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length)
                    .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
            // The decoder discards the rest of what the connection sends: it is closed, as Reactor Netty closes it.
            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
