package io.retrysafe.conformance;

/**
 * A {@link ConformanceTarget} the test runs as processes of its own, so it can stop them and start
 * them again: {@link RestartConformance}.
 */
public interface RestartableTarget extends ConformanceTarget {

    /**
     * Stops every process of the service that holds idempotency state in memory (for a gateway: the
     * gateway and its upstream) and starts them again on the same databases; returns once the service
     * answers again. {@link #baseUri()} may change (a new port): the suite asks for it again.
     */
    void restart() throws Exception;
}
