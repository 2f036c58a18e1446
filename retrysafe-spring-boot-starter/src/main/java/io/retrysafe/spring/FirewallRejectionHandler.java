package io.retrysafe.spring;

import io.retrysafe.servlet.RejectedRequests;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.security.web.firewall.HttpStatusRequestRejectedHandler;
import org.springframework.security.web.firewall.RequestRejectedException;
import org.springframework.security.web.firewall.RequestRejectedHandler;

/**
 * Spring Security's firewall refuses some requests before the filter sees them (a header value outside
 * printable ASCII, {@code ;} or an encoded slash in the path). On a protected route the client gets the
 * filter's problem document (invalid-key when its Idempotency-Key broke a rule, else request-rejected);
 * elsewhere Spring Security's default answer, a bare {@code 400}.
 */
final class FirewallRejectionHandler implements RequestRejectedHandler {
    private final RejectedRequests rejected;
    private final RequestRejectedHandler elsewhere = new HttpStatusRequestRejectedHandler();

    FirewallRejectionHandler(RejectedRequests rejected) {
        this.rejected = rejected;
    }

    @Override
    public void handle(HttpServletRequest request, HttpServletResponse response,
            RequestRejectedException requestRejectedException) throws IOException, ServletException {
        if (!rejected.answer(request, response)) {
            elsewhere.handle(request, response, requestRejectedException);
        }
    }
}
