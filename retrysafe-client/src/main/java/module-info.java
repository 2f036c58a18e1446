/** An HTTP client that sends one Idempotency-Key per intent and keeps it across its retries. */
module io.retrysafe.client {
    requires transitive io.retrysafe;
    requires transitive java.net.http;
    exports io.retrysafe.client;
}
