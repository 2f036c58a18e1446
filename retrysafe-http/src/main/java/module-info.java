/**
 * The decisions every HTTP front door of RetrySafe makes alike (the key, the caller, the fingerprint, the
 * answer to each outcome, RFC 9457 problems), with no HTTP stack of its own: the servlet filter, the WebFlux
 * filter, the gateway and the other front doors adapt their request and response types to it.
 */
module io.retrysafe.http {
    requires transitive io.retrysafe;
    exports io.retrysafe.http;
}
