package io.retrysafe.gateway;

import io.retrysafe.http.ProblemType;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * The problems the gateway answers that are HTTP's own, with no type of RetrySafe's: {@code about:blank}, titled
 * with the status's reason phrase (RFC 9457, 4.2), so that no answer of the gateway is an HTML page.
 */
final class EdgeProblems {
    private EdgeProblems() {
    }

    static byte[] body(int status, String detail) {
        StringBuilder json = new StringBuilder(128).append("{\"type\":\"about:blank\",\"title\":\"")
                .append(HttpStatus.getMessage(status)).append("\",\"status\":").append(status);
        if (detail != null) {
            json.append(",\"detail\":\"").append(detail.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
        }
        return json.append('}').toString().getBytes(StandardCharsets.UTF_8);
    }

    static void send(HttpServletResponse response, int status, String detail) throws IOException {
        byte[] body = body(status, detail);
        response.setStatus(status);
        response.setContentType(ProblemType.CONTENT_TYPE);
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    /**
     * The answer to what the server itself refuses before the gateway sees it (a control character in a header, a
     * header too large, a bad request line): a problem, {@code /problems/request-rejected} for a {@code 400}.
     */
    static byte[] rejected(int status) {
        return status == HttpStatus.BAD_REQUEST_400 ? ProblemType.REQUEST_REJECTED.body("the request was refused before "
                + "it was processed: its request line, a header (for example a control character in it) or its framing "
                + "is not allowed", null) : body(status, null);
    }

    /** Jetty's error pages, as problems. */
    static final class ErrorPages extends ErrorHandler {
        @Override
        protected void generateResponse(Request request, Response response, int code, String message,
                Throwable cause, Callback callback) {
            byte[] body = rejected(code);
            response.getHeaders().put(HttpHeader.CONTENT_TYPE, ProblemType.CONTENT_TYPE);
            response.getHeaders().put(HttpHeader.CONTENT_LENGTH, body.length);
            response.write(true, ByteBuffer.wrap(body), callback);
        }

        @Override
        public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
            fields.put(HttpHeader.CONTENT_TYPE, ProblemType.CONTENT_TYPE);
            return ByteBuffer.wrap(rejected(status));
        }
    }
}
