package io.retrysafe.gateway;

import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;

/**
 * Adds the route's authentication challenge to a {@code 401} answered for want of a caller: RFC 9110
 * §15.5.2 requires one, so that a client knows which credentials to send. An upstream's own challenge
 * is left as it is.
 */
final class ChallengingResponse extends HttpServletResponseWrapper {
    private static final String HEADER = "WWW-Authenticate";

    private final String challenge;

    ChallengingResponse(HttpServletResponse response, String challenge) {
        super(response);
        this.challenge = challenge;
    }

    @Override
    public void setStatus(int status) {
        challengeIf(status);
        super.setStatus(status);
    }

    @Override
    public void sendError(int status) throws IOException {
        challengeIf(status);
        super.sendError(status);
    }

    @Override
    public void sendError(int status, String message) throws IOException {
        challengeIf(status);
        super.sendError(status, message);
    }

    private void challengeIf(int status) {
        if (status == SC_UNAUTHORIZED && !containsHeader(HEADER)) {
            setHeader(HEADER, challenge);
        }
    }
}
