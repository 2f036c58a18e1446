package io.retrysafe.gateway;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;

/**
 * The request as the gateway forwards it: its method and path as matched (a route's own spelling), so that the
 * route's filter fingerprints, and the upstream gets, what the gateway matched.
 */
final class ForwardedRequest extends HttpServletRequestWrapper {
    private final String method;
    private final String path;

    ForwardedRequest(HttpServletRequest request, String method, String path) {
        super(request);
        this.method = method;
        this.path = path;
    }

    @Override
    public String getMethod() {
        return method;
    }

    @Override
    public String getRequestURI() {
        return path;
    }

    @Override
    public StringBuffer getRequestURL() {
        return new StringBuffer(getScheme()).append("://").append(getServerName()).append(':').append(getServerPort())
                .append(path);
    }

    @Override
    public String getServletPath() {
        return "";
    }

    @Override
    public String getPathInfo() {
        return path;
    }
}
