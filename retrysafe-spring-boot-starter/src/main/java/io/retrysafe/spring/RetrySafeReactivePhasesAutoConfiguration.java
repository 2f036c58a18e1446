package io.retrysafe.spring;

import io.r2dbc.spi.Connection;
import io.retrysafe.AsyncPhaseCompleter;
import io.retrysafe.AsyncPhasedOperation;
import io.retrysafe.AsyncPhasedRetrySafe;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.r2dbc.R2dbcIdempotencyStore;
import io.retrysafe.r2dbc.R2dbcPhaseJournal;
import io.retrysafe.spi.RetrySafeListener;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Phased operations in a reactive application on the R2DBC store: an {@link AsyncPhasedRetrySafe} on the
 * non-blocking engine, whose local steps run on connections of the store's {@code ConnectionFactory}, and the
 * completer of the application's {@link AsyncPhasedOperation} beans, scheduled on every instance as the JDBC
 * store's is ({@link RetrySafeCompleterScheduler}; one runs at a time, across both faces).
 */
@AutoConfiguration(after = {RetrySafeReactiveAutoConfiguration.class, RetrySafeMicrometerAutoConfiguration.class,
        RetrySafePhasesAutoConfiguration.class})
@ConditionalOnClass(name = {"io.retrysafe.r2dbc.R2dbcPhaseJournal", "io.retrysafe.AsyncPhasedRetrySafe"})
@ConditionalOnBean(type = "io.retrysafe.r2dbc.R2dbcIdempotencyStore")
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
public class RetrySafeReactivePhasesAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    AsyncPhasedRetrySafe<Connection> asyncPhasedRetrySafe(AsyncRetrySafe engine, R2dbcIdempotencyStore store,
            RetrySafeProperties properties) {
        return AsyncPhasedRetrySafe.builder(engine, R2dbcPhaseJournal.of(store))
                .maxSavedBytes(Math.toIntExact(properties.phases().maxSavedBytes().toBytes())).build();
    }

    /** The completer of the application's operations; null when it declares none (nothing to complete). */
    static AsyncPhaseCompleter<Connection> completer(AsyncPhasedRetrySafe<Connection> phased,
            RetrySafeProperties properties, List<AsyncPhasedOperation<?, ?, ?>> operations) {
        if (operations.isEmpty()) {
            return null;
        }
        RetrySafeProperties.Completer c = properties.phases().completer();
        AsyncPhaseCompleter.Builder<Connection> completer = phased.completer().idleFor(c.idleFor())
                .batchSize(c.batchSize());
        for (AsyncPhasedOperation<?, ?, ?> operation : operations) {
            @SuppressWarnings("unchecked") // the only non-blocking phased engine here is R2DBC's: its steps take a Connection
            AsyncPhasedOperation<?, ?, Connection> onR2dbc = (AsyncPhasedOperation<?, ?, Connection>) operation;
            completer.register(onR2dbc);
        }
        return completer.build();
    }

    /** The completer of the application's {@link AsyncPhasedOperation} beans, known once every bean exists. */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "retrysafe.phases.completer", name = "enabled", havingValue = "true",
            matchIfMissing = true)
    RetrySafeCompleterScheduler retrySafeCompleterScheduler(AsyncPhasedRetrySafe<Connection> phased,
            RetrySafeProperties properties, ObjectProvider<AsyncPhasedOperation<?, ?, ?>> operations,
            ObjectProvider<RetrySafeListener> listeners) {
        return new RetrySafeCompleterScheduler(() -> RetrySafeCompleterScheduler.Completer.of(completer(phased,
                properties, operations.orderedStream().toList())), properties.phases().completer().interval(),
                RetrySafeCompleterScheduler.backlogGauge(listeners));
    }
}
