package io.retrysafe.examples.paymentstesting;

import io.retrysafe.conformance.ConformanceTarget;
import io.retrysafe.conformance.Credentials;
import java.net.URI;
import java.util.function.IntSupplier;

/**
 * A payments service as a target of the shared HTTP conformance suite: its port, its demo users
 * (alice:alice-secret, bob:bob-secret), its payments counted in {@link PaymentsDatabase}, and a
 * request held in flight by a test filter of the service's stack ({@link TestHold}).
 */
public abstract class PaymentsTarget implements ConformanceTarget {
    public static final String ALICE = "alice";
    public static final String BOB = "bob";

    private final IntSupplier port;

    /** @param port where the service listens now: a service restarted may listen elsewhere */
    protected PaymentsTarget(IntSupplier port) {
        this.port = port;
    }

    @Override
    public URI baseUri() {
        return URI.create("http://127.0.0.1:" + port.getAsInt());
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
        return PaymentsDatabase.newAccount(balance);
    }

    @Override
    public void setBalance(String account, long balance) throws Exception {
        PaymentsDatabase.update("UPDATE account SET balance = ? WHERE id = ?", balance, account);
    }

    @Override
    public long effects(String account) throws Exception {
        return PaymentsDatabase.payments(account);
    }

    @Override
    public TestHold hold(String name) {
        return TestHold.hold(name);
    }
}
