package io.retrysafe.spring;

import io.retrysafe.RetrySafe;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.spi.RetrySafeListener;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;

/**
 * The engine's meters of one broker's inbox, tagged {@code source=<broker>} ({@code kafka},
 * {@code rabbitmq}), so that messages are counted apart from HTTP requests. A bean only when Micrometer
 * is there.
 */
record InboxMeters(String source, RetrySafeListener listener) {

    /**
     * The engine of {@code source}'s inbox: {@code tx}'s store, name and policy, and the application's
     * listeners, but with {@code source}'s meters in place of the HTTP engine's.
     */
    static TransactionalRetrySafe engine(TransactionalRetrySafe tx, String source, ObjectProvider<InboxMeters> meters,
            ObjectProvider<RetrySafeListener> listeners) {
        InboxMeters own = meters.stream().filter(m -> m.source().equals(source)).findFirst().orElse(null);
        List<RetrySafeListener> all = new ArrayList<>();
        if (own != null) {
            all.add(own.listener());
        }
        listeners.orderedStream().filter(l -> own == null || !isHttpMeters(l)).forEach(all::add);
        RetrySafe base = tx.engine();
        RetrySafe.Builder engine = RetrySafe.builder(base.store()).name(base.name()).policy(base.policy());
        if (!all.isEmpty()) {
            engine.listener(all.size() == 1 ? all.get(0) : new CompositeListener(all));
        }
        return TransactionalRetrySafe.of(engine.build());
    }

    /** True for the HTTP engine's Micrometer listener, which an inbox replaces with its own. */
    private static boolean isHttpMeters(RetrySafeListener candidate) {
        return candidate instanceof MicrometerRetrySafeListener;
    }
}
