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
    LAST
}
