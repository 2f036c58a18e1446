package io.retrysafe;

/**
 * What an operation is told about the attempt running it. {@link #number()} is 1 for the first run
 * and grows each time a retry runs the operation again (after a released key or a lease taken over
 * from an owner that died): an operation with a side effect outside the database can then check
 * whether the earlier attempt got through, for example by passing the same key to its payment provider.
 */
public record Attempt(IdempotencyKey key, int number) {

    public boolean isFirst() {
        return number == 1;
    }
}
