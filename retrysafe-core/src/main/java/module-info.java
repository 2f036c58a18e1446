/**
 * RetrySafe's engine: the record per (scope, key) claimed before the work, the stored answer replayed on a
 * retry, and the store SPI. No dependencies beyond the JDK.
 *
 * <p>{@code io.retrysafe} and {@code io.retrysafe.spi} are the API. {@code io.retrysafe.internal} holds the
 * helpers RetrySafe's own modules share (argument checks, hex, the stored-header encoding, the fast path's
 * decisions, canonical JSON and the HTTP fingerprint, an engine's keys in flight and its builder's settings);
 * it is exported to those modules only and may change in any release.
 */
@SuppressWarnings("module") // the modules named below are not on the module path when this one is built
module io.retrysafe {
    exports io.retrysafe;
    exports io.retrysafe.spi;
    exports io.retrysafe.internal to
            io.retrysafe.client,
            io.retrysafe.gateway,
            io.retrysafe.grpc,
            io.retrysafe.http,
            io.retrysafe.inbox,
            io.retrysafe.inbox.tck,
            io.retrysafe.jaxrs,
            io.retrysafe.jdbc,
            io.retrysafe.kafka,
            io.retrysafe.micrometer,
            io.retrysafe.nats,
            io.retrysafe.r2dbc,
            io.retrysafe.rabbitmq,
            io.retrysafe.redis,
            io.retrysafe.servlet,
            io.retrysafe.spring,
            io.retrysafe.sql,
            io.retrysafe.dynamodb,
            io.retrysafe.webflux;
}
