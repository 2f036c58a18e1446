package io.retrysafe.jaxrs;

import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;

/**
 * Maps what no mapper of the application's maps, so that the response filter runs and releases the key: Jakarta
 * REST runs no response filter for an exception it lets escape to the container. The answer is the container's
 * ({@code 500}, no body); a {@code WebApplicationException} keeps its own response, as without a mapper.
 */
final class EscapedExceptions implements ExceptionMapper<Throwable> {
    private static final System.Logger LOG = System.getLogger(EscapedExceptions.class.getName());

    @Override
    public Response toResponse(Throwable exception) {
        if (exception instanceof WebApplicationException e) {
            return e.getResponse();
        }
        LOG.log(System.Logger.Level.ERROR, "a resource failed; answering 500", exception);
        return Response.serverError().build();
    }
}
