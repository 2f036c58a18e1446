package io.retrysafe.jdbc;

/**
 * When transactional mode writes the key's record: before the operation, or with its commit. Both
 * commit the key, the operation's writes and the response in one transaction; they differ in what a
 * concurrent duplicate does, and in cost.
 */
public enum KeyOrder {
    /**
     * The default: an atomic insert-if-absent is the transaction's first
     * statement, and the completion updates that row. A duplicate arriving while the first runs
     * waits on the key (up to the lock timeout), then replays: the operation runs once.
     */
    FIRST,
    /**
     * The record is read first and, when there is none, inserted completed with the commit, in the
     * commit's round trip. One row write instead of two, so less work for the database; the cost:
     * a duplicate that arrives while the first is in flight also runs the operation, inside its own
     * transaction, and is rolled back when its insert meets the first's record, then answered with
     * the first's response. Only for operations whose writes are all in the transaction and that
     * tolerate being run and rolled back (nothing sent outside); PostgreSQL's standard layout only.
     * A key that has a record already (expired, released, in progress) is claimed as with
     * {@link #FIRST}.
     */
    LAST,
    /**
     * As {@link #LAST}, without the read before the operation: nothing is sent before the operation's
     * own statements, and the record is inserted completed with the commit. The bare transaction's
     * round trips, and one row write. The cost moves to retries: a retry of a completed key runs the
     * operation too, inside its own transaction, which is rolled back when its insert meets the record,
     * and is answered with the stored response ({@code 422} for another body). A retry whose operation
     * fails, or whose answer is not to be kept, is answered from the record as well. A key whose record
     * a claim would take over (expired, or this body's released or abandoned attempt) runs the operation
     * a second time, claimed first ({@link TransactionalRetrySafe#execute}, and
     * {@link TransactionalRetrySafe#joinNewOrRunAgain} in a new transaction of the caller's); joined to a
     * caller's transaction otherwise, or asynchronous, where it cannot run again, the insert takes such a
     * record over itself, a statement that costs every request more. For
     * the work {@link #LAST} is for, when retries are rare; PostgreSQL's standard layout only.
     */
    LAST_NO_LOOKUP;

    /** Whether the record is written with the commit, after the operation. */
    boolean writesLast() {
        return this != FIRST;
    }
}
