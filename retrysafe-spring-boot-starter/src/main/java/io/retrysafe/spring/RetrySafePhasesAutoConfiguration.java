package io.retrysafe.spring;

import io.retrysafe.PhaseCompleter;
import io.retrysafe.PhasedOperation;
import io.retrysafe.PhasedRetrySafe;
import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcPhaseJournal;
import io.retrysafe.spi.RetrySafeListener;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Phased operations on the JDBC store: a {@link PhasedRetrySafe} on the standalone engine, whose local steps
 * run on connections of the store's data source, and the completer of the application's
 * {@link PhasedOperation} beans, scheduled on every instance (one runs at a time).
 */
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeMicrometerAutoConfiguration.class})
@ConditionalOnBean(JdbcIdempotencyStore.class)
@ConditionalOnProperty(prefix = "retrysafe", name = "enabled", havingValue = "true", matchIfMissing = true)
public class RetrySafePhasesAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    PhasedRetrySafe<Connection> phasedRetrySafe(RetrySafe retrySafe, JdbcIdempotencyStore store,
            RetrySafeProperties properties) {
        return PhasedRetrySafe.builder(retrySafe, JdbcPhaseJournal.of(store))
                .maxSavedBytes(Math.toIntExact(properties.phases().maxSavedBytes().toBytes())).build();
    }

    /** The application's operations, for the completer; null when it declares none (nothing to complete). */
    static PhaseCompleter<Connection> completer(PhasedRetrySafe<Connection> phased, RetrySafeProperties properties,
            List<PhasedOperation<?, ?, ?>> operations) {
        if (operations.isEmpty()) {
            return null;
        }
        RetrySafeProperties.Completer c = properties.phases().completer();
        PhaseCompleter.Builder<Connection> completer = phased.completer().idleFor(c.idleFor()).batchSize(c.batchSize());
        for (PhasedOperation<?, ?, ?> operation : operations) {
            @SuppressWarnings("unchecked") // the only phased engine here is the JDBC one: its steps take a Connection
            PhasedOperation<?, ?, Connection> onJdbc = (PhasedOperation<?, ?, Connection>) operation;
            completer.register(onJdbc);
        }
        return completer.build();
    }

    /**
     * The scheduler of the completer of the application's operations: its {@link PhasedOperation} beans and its
     * phased {@code @Idempotent} methods, known once every bean exists (the completer is built at start).
     */
    static RetrySafeCompleterScheduler scheduler(PhasedRetrySafe<Connection> phased, RetrySafeProperties properties,
            ObjectProvider<PhasedOperation<?, ?, ?>> operations, ObjectProvider<PhasedMethods> methods,
            LongConsumer backlog) {
        return new RetrySafeCompleterScheduler(() -> {
            List<PhasedOperation<?, ?, ?>> all = new ArrayList<>(operations.orderedStream().toList());
            methods.ifAvailable(m -> all.addAll(m.operations()));
            return RetrySafeCompleterScheduler.Completer.of(completer(phased, properties, all));
        }, properties.phases().completer().interval(), backlog);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "retrysafe.phases.completer", name = "enabled", havingValue = "true",
            matchIfMissing = true)
    RetrySafeCompleterScheduler retrySafeCompleterScheduler(PhasedRetrySafe<Connection> phased,
            RetrySafeProperties properties, ObjectProvider<PhasedOperation<?, ?, ?>> operations,
            ObjectProvider<PhasedMethods> methods, ObjectProvider<RetrySafeListener> listeners) {
        return scheduler(phased, properties, operations, methods, RetrySafeCompleterScheduler.backlogGauge(listeners));
    }
}
