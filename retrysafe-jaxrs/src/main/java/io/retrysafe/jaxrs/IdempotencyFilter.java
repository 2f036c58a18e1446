package io.retrysafe.jaxrs;

import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.Admission;
import io.retrysafe.http.Admissions;
import io.retrysafe.http.HttpAnswer;
import io.retrysafe.http.HttpForms;
import io.retrysafe.http.HttpForms.MalformedFormException;
import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.http.HttpSemantics;
import io.retrysafe.http.HttpSettings;
import io.retrysafe.http.ProblemType;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.UriInfo;
import jakarta.ws.rs.ext.MessageBodyWriter;
import jakarta.ws.rs.ext.Providers;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The request filter claims a protected request's key before its resource runs (or answers without it); the
 * response filter records the resource's response and lets it go out only once it is durable.
 */
final class IdempotencyFilter implements ContainerRequestFilter, ContainerResponseFilter {
    private static final String CLAIM = IdempotencyFilter.class.getName() + ".claim";

    private final Supplier<Protection> protection;
    private final Supplier<Providers> runtimeProviders;

    @Context
    private Providers providers;

    /**
     * @param protection what to protect and how, asked for on each request; null: nothing is protected
     * @param runtimeProviders where the entity's writer is looked up when the runtime injected no {@code @Context}
     *     into this instance; null: it always does
     */
    IdempotencyFilter(Supplier<Protection> protection, Supplier<Providers> runtimeProviders) {
        this.protection = protection;
        this.runtimeProviders = runtimeProviders;
    }

    /** The settings and the mode, with each route's admission: built once, before the first request is filtered. */
    static final class Protection {
        private final HttpSettings<JaxrsScopeResolver> settings;
        private final Mode mode;
        private final Map<HttpRoute, Admissions> admissions = new IdentityHashMap<>();

        Protection(HttpSettings<JaxrsScopeResolver> settings, Mode mode) {
            this.settings = settings;
            this.mode = mode;
            for (HttpRoute route : settings.routes()) {
                admissions.put(route, Admissions.of(route, settings.keyRules(), mode.engine().listener()));
            }
        }
    }

    @Override
    public void filter(ContainerRequestContext request) throws IOException {
        Protection p = protection.get();
        if (p != null) {
            filter(request, p.settings, p.mode, p.admissions);
        }
    }

    private void filter(ContainerRequestContext request, HttpSettings<JaxrsScopeResolver> settings, Mode mode,
            Map<HttpRoute, Admissions> admissions) throws IOException {
        // The path within the application as sent: matched normalised, so no other spelling walks around a route.
        String path = rawPath(request.getUriInfo());
        HttpRoute route = settings.route(request.getMethod(), HttpPaths.normalise(path));
        if (route == null) {
            return;
        }
        List<String> keyLines = values(request).apply(HttpSemantics.KEY_HEADER);
        if (keyLines.isEmpty() && !route.keyRequired()) {
            return;
        }
        int max = settings.maxRequestBytes();
        if (request.getLength() > max) {
            // Refused unread: the answer says Connection: close, so the client sends no more on this connection and
            // need not send the declared bytes (Undertow closes it at once; Grizzly and Vert.x leave it to the client).
            HttpAnswer tooLarge = HttpSemantics.tooLarge(max, request.getLength());
            request.abortWith(Answers.response(HttpSemantics.unreadBody(tooLarge, request.getLength(),
                    request.getHeaderString("Transfer-Encoding"))));
            return;
        }
        byte[] body;
        try (InputStream in = request.getEntityStream()) {
            body = in == null ? new byte[0] : in.readNBytes(max + 1);
        } catch (IOException e) {
            // The body ended before its length: it cannot be fingerprinted, and the request must not run.
            request.abortWith(Answers.response(ProblemType.INCOMPLETE_BODY.answer("the request body could not be "
                    + "read to its end", null, null)));
            return;
        }
        if (body.length > max) {
            request.abortWith(Answers.response(HttpSemantics.tooLarge(max, -1)));
            return;
        }
        request.setEntityStream(new ByteArrayInputStream(body));
        String contentType = request.getHeaderString(HttpHeaders.CONTENT_TYPE);
        String query = request.getUriInfo().getRequestUri().getRawQuery();
        byte[] content;
        try {
            // A form is its fields, sorted (the query's too), as the servlet filter fingerprints a container's.
            content = HttpForms.fingerprinted(query, body, contentType);
        } catch (MalformedFormException e) {
            request.abortWith(Answers.response(ProblemType.MALFORMED_FORM.answer(e.getMessage(), null, null)));
            return;
        }
        Admission admission = admissions.get(route).admit(keyLines, settings.scope().resolve(request),
                request.getMethod(), path, query, values(request), contentType, content);
        if (admission instanceof Admission.Refused refused) {
            request.abortWith(Answers.response(refused.answer()));
            return;
        }
        Admission.Admitted admitted = (Admission.Admitted) admission;
        Claim claim = mode.claim(admitted.key(), admitted.fingerprint(), route.policy().orElse(null));
        if (claim instanceof Claim.Answered answered) {
            request.abortWith(Answers.response(answered.answer()));
        } else {
            request.setProperty(CLAIM, claim);
        }
    }

    @Override
    public void filter(ContainerRequestContext request, ContainerResponseContext response) throws IOException {
        if (!(request.getProperty(CLAIM) instanceof Claim.Running claim)) {
            return;
        }
        request.removeProperty(CLAIM);
        HttpSettings<JaxrsScopeResolver> settings = protection.get().settings;
        byte[] body;
        try {
            body = response.hasEntity() ? entityBytes(response) : new byte[0];
        } catch (IOException | RuntimeException e) {
            claim.abandon(e);
            throw e;
        }
        int status = response.getStatus();
        Map<String, List<String>> headers = storedHeaders(response, settings);
        StoredResponse stored = body.length > settings.maxResponseBytes()
                ? HttpSemantics.withoutBody(status, headers, body.length)
                : StoredResponse.of(status, headers, body);
        Outcome<StoredResponse> outcome;
        try {
            outcome = claim.complete(stored);
        } catch (CompletionException e) {
            HttpAnswer failure = HttpSemantics.failure(e.getCause());
            if (failure == null) {
                throw e;
            }
            // Not recorded (a failed commit rolled the resource's writes back): its response must not go out.
            Answers.replace(response, failure);
            return;
        }
        HttpAnswer refusal = HttpSemantics.refusal(outcome);
        if (refusal != null) {
            // The key written last: another attempt committed first, and its answer is this one's.
            Answers.replace(response, refusal);
        }
    }

    /**
     * The entity as the writer Jakarta REST would pick writes it, so that what is stored is what is sent; the
     * response then carries these bytes.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private byte[] entityBytes(ContainerResponseContext response) throws IOException {
        MediaType type = response.getMediaType() == null ? MediaType.WILDCARD_TYPE : response.getMediaType();
        Providers writers = providers != null || runtimeProviders == null ? providers : runtimeProviders.get();
        MessageBodyWriter writer = writers.getMessageBodyWriter(response.getEntityClass(), response.getEntityType(),
                response.getEntityAnnotations(), type);
        if (writer == null) {
            throw new IllegalStateException("no MessageBodyWriter for " + response.getEntityClass().getName()
                    + " as " + type);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        writer.writeTo(response.getEntity(), response.getEntityClass(), response.getEntityType(),
                response.getEntityAnnotations(), type, response.getHeaders(), out);
        byte[] bytes = out.toByteArray();
        if (response.getMediaType() == null) {
            response.setEntity(bytes);
        } else {
            response.setEntity(bytes, response.getEntityAnnotations(), response.getMediaType());
        }
        return bytes;
    }

    /** The response's allow-listed headers, with its media type as Content-Type where no header names it. */
    private static Map<String, List<String>> storedHeaders(ContainerResponseContext response,
            HttpSettings<JaxrsScopeResolver> settings) {
        Map<String, List<String>> stored = new LinkedHashMap<>();
        response.getStringHeaders().forEach((name, values) -> {
            if (HttpSemantics.isStored(name, settings.replayedHeaders())) {
                stored.put(name, new ArrayList<>(values));
            }
        });
        if (response.getMediaType() != null && response.getHeaderString(HttpHeaders.CONTENT_TYPE) == null
                && HttpSemantics.isStored(HttpHeaders.CONTENT_TYPE, settings.replayedHeaders())) {
            stored.put(HttpHeaders.CONTENT_TYPE, List.of(response.getMediaType().toString()));
        }
        return stored;
    }

    /**
     * The path within the application as sent, still encoded: the request URI's path after the base URI's.
     * {@code UriInfo.getPath(false)} would say the same, but Quarkus REST does not support it.
     */
    private static String rawPath(UriInfo uri) {
        String base = uri.getBaseUri().getRawPath();
        String prefix = base.endsWith("/") ? base : base + "/";
        String full = uri.getRequestUri().getRawPath();
        return full.startsWith(prefix) ? "/" + full.substring(prefix.length()) : full;
    }

    /** A request header's field values in order, empty when absent. */
    private static Function<String, List<String>> values(ContainerRequestContext request) {
        return name -> {
            List<String> values = request.getHeaders().get(name);
            return values == null ? List.of() : values;
        };
    }
}
