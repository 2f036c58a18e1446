package io.retrysafe.inbox.tck;

import io.retrysafe.Attempt;
import java.sql.Connection;

/** The contract's handler, which the harness wraps in its adapter's handler type: the message's body, the transaction's connection, the attempt. */
@FunctionalInterface
public interface ContractHandler {

    void handle(byte[] payload, Connection connection, Attempt attempt) throws Exception;
}
