package io.retrysafe.examples.paymentstesting;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;

/**
 * Test only: holds a request marked with a {@link TestHold} until the test releases it. A servlet
 * service registers it right after the RetrySafe filter, that is inside the request's transaction,
 * after its key was claimed: a duplicate sent meanwhile meets a request that is provably in flight.
 */
public final class HoldingFilter implements Filter {

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
            throws IOException, ServletException {
        TestHold.holdIfMarked(((HttpServletRequest) request).getHeader(TestHold.HEADER));
        chain.doFilter(request, response);
    }
}
