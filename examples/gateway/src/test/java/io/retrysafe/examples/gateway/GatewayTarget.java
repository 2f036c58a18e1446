package io.retrysafe.examples.gateway;

import io.retrysafe.conformance.Credentials;
import io.retrysafe.conformance.Hold;
import io.retrysafe.conformance.RestartableTarget;
import java.net.URI;

/**
 * The gateway in front of the Python upstream as a target of the shared HTTP conformance suite. An
 * effect is an execution of the upstream's {@code POST /payments} (a row of its {@code execution}
 * table): the suite counts how often the gateway let the operation run, not only what was booked.
 */
record GatewayTarget(Gateway gateway, Upstream upstream) implements RestartableTarget {
    /** The example's users (users.txt): their passwords, which the file keeps only as bcrypt hashes. */
    static final Credentials ALICE = Credentials.basic("alice", "alice-secret");
    static final Credentials BOB = Credentials.basic("bob", "bob-secret");

    @Override
    public URI baseUri() {
        return gateway.uri();
    }

    @Override
    public Credentials firstUser() {
        return ALICE;
    }

    @Override
    public Credentials secondUser() {
        return BOB;
    }

    @Override
    public String newAccount(long balance) throws Exception {
        return upstream.database().newAccount(balance);
    }

    @Override
    public void setBalance(String account, long balance) throws Exception {
        upstream.database().update("UPDATE account SET balance = ? WHERE id = ?", balance, account);
    }

    @Override
    public long effects(String account) throws Exception {
        return upstream.database().executions(account);
    }

    @Override
    public Hold hold(String name) {
        return upstream.hold(name);
    }

    @Override
    public long maxRequestBytes() {
        return gateway.maxRequestBytes();
    }

    @Override
    public void restart() throws Exception {
        gateway.stop();
        upstream.stop();
        upstream.restart();
        gateway.restart();
    }
}
