package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.conformance.Credentials;
import io.retrysafe.conformance.Hold;
import io.retrysafe.conformance.RestartableTarget;
import io.retrysafe.webflux.WebFluxIdempotency;
import java.net.URI;
import java.util.function.IntSupplier;

/**
 * This service as a target of the shared HTTP conformance suite: its port, its demo users, its
 * payments counted in the test database, and {@link HoldingWebFilter} to hold a request in flight.
 * A service the test runs as a child JVM can be restarted, on another port.
 */
final class ServiceTarget implements RestartableTarget {
    static final String ALICE = "alice";
    static final String BOB = "bob";

    /** Restarts the service; {@link #port} then says where it listens. */
    @FunctionalInterface
    interface Restart {
        void restart() throws Exception;
    }

    private final IntSupplier port;
    private final Restart restart;

    /** The service in the test's own JVM, which cannot be restarted. */
    ServiceTarget(IntSupplier port) {
        this(port, () -> {
            throw new UnsupportedOperationException("the service runs in the test's JVM; it cannot be restarted");
        });
    }

    ServiceTarget(IntSupplier port, Restart restart) {
        this.port = port;
        this.restart = restart;
    }

    @Override
    public URI baseUri() {
        return URI.create("http://127.0.0.1:" + port.getAsInt());
    }

    @Override
    public void restart() throws Exception {
        restart.restart();
    }

    @Override
    public Credentials firstUser() {
        return Credentials.basic(ALICE, ALICE + "-secret");
    }

    @Override
    public Credentials secondUser() {
        return Credentials.basic(BOB, BOB + "-secret");
    }

    @Override
    public String newAccount(long balance) throws Exception {
        return ServiceDatabase.newAccount(balance);
    }

    @Override
    public void setBalance(String account, long balance) throws Exception {
        ServiceDatabase.update("UPDATE account SET balance = ? WHERE id = ?", balance, account);
    }

    @Override
    public long effects(String account) throws Exception {
        return ServiceDatabase.payments(account);
    }

    @Override
    public Hold hold(String name) {
        return HoldingWebFilter.hold(name);
    }

    /** application.yml leaves retrysafe.http.max-request-bytes at its default. */
    @Override
    public long maxRequestBytes() {
        return WebFluxIdempotency.DEFAULT_MAX_REQUEST_BYTES;
    }
}
