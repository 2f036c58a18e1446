package io.retrysafe.jaxrs;

import io.retrysafe.http.HttpAnswer;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.core.Response;
import java.lang.annotation.Annotation;

/** Writes the shared decisions' answers as Jakarta REST responses. */
final class Answers {
    private static final Annotation[] NONE = new Annotation[0];

    private Answers() {
    }

    /** {@code answer} as a whole response, for a request filter to abort with. */
    static Response response(HttpAnswer answer) {
        Response.ResponseBuilder response = Response.status(answer.status());
        answer.headers().forEach((name, values) -> values.forEach(v -> response.header(name, v)));
        byte[] body = answer.body();
        return (body.length == 0 ? response : response.entity(body)).build();
    }

    /** Puts {@code answer} in place of the resource's response, whose headers are dropped with it. */
    static void replace(ContainerResponseContext response, HttpAnswer answer) {
        response.setStatus(answer.status());
        response.getHeaders().clear();
        answer.headers().forEach((name, values) -> values.forEach(v -> response.getHeaders().add(name, v)));
        byte[] body = answer.body();
        if (body.length == 0) {
            response.setEntity(null);
        } else if (response.getMediaType() == null) {
            response.setEntity(body);
        } else {
            response.setEntity(body, NONE, response.getMediaType());
        }
    }
}
