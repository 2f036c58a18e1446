package io.retrysafe.servlet;

import io.retrysafe.http.HttpPaths;
import jakarta.servlet.http.HttpServletRequest;

/** The path a servlet request is matched on: {@link HttpPaths#normalise}d, inside the application. */
final class RequestPath {
    private RequestPath() {
    }

    static String of(HttpServletRequest request) {
        String uri = request.getRequestURI();
        String context = request.getContextPath();
        return normalise(context != null && uri.startsWith(context) ? uri.substring(context.length()) : uri);
    }

    /** Normalises a raw path (as sent, before decoding), as {@link HttpPaths#normalise} does. */
    static String normalise(String raw) {
        return HttpPaths.normalise(raw);
    }
}
