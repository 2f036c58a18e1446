package io.retrysafe.spring;

import io.retrysafe.servlet.RejectedRequests;
import java.io.IOException;
import org.apache.catalina.Context;
import org.apache.catalina.Valve;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.core.StandardHost;
import org.apache.catalina.valves.ErrorReportValve;

/**
 * Tomcat's error report for requests it refused itself, before any filter ran (its parser refuses
 * control characters in a header with {@code 400}): on a protected route, the filter's problem
 * document instead of Tomcat's HTML page. Everything else is reported as Tomcat's own valve would.
 */
final class ProblemErrorReportValve extends ErrorReportValve {
    private final RejectedRequests rejected;

    ProblemErrorReportValve(RejectedRequests rejected) {
        this.rejected = rejected;
    }

    /**
     * Puts the valve on the context's host. Called after Boot's own Tomcat customizer (order 0), which may
     * have put an error report valve there: that one is replaced (keeping its settings), since the
     * innermost valve reports first.
     */
    static void install(Context context, RejectedRequests rejected) {
        if (context.getParent() instanceof StandardHost host) {
            ProblemErrorReportValve valve = new ProblemErrorReportValve(rejected);
            for (Valve existing : host.getPipeline().getValves()) {
                if (existing instanceof ErrorReportValve boots) {
                    valve.setShowReport(boots.isShowReport());
                    valve.setShowServerInfo(boots.isShowServerInfo());
                    host.getPipeline().removeValve(existing);
                }
            }
            host.setErrorReportValveClass(ProblemErrorReportValve.class.getName());
            host.getPipeline().addValve(valve);
        }
    }

    @Override
    protected void report(Request request, Response response, Throwable throwable) {
        // The parser's exception (throwable) quotes the header line, key included: it is not repeated.
        if (response.getStatus() == 400 && response.getContentWritten() == 0
                && rejected.isProtected(request) && response.setErrorReported()) {
            try {
                if (rejected.answer(request, response)) {
                    response.finishResponse();
                }
            } catch (IOException | IllegalStateException e) {
                // The client is gone or the response was closed: there is nobody left to answer.
            }
            return;
        }
        super.report(request, response, throwable);
    }
}
