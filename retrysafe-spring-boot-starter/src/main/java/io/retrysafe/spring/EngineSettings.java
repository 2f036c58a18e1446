package io.retrysafe.spring;

import io.retrysafe.OperationPolicy;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.internal.Engines;
import io.retrysafe.spi.RetrySafeListener;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;

/**
 * {@code retrysafe.*} applied to an engine's builder, the blocking one's or the non-blocking one's
 * alike: name, policy, fail-open, completion attempts and every {@link RetrySafeListener} bean (the
 * meters among them), so that both engines decide and report the same way.
 */
final class EngineSettings {
    private EngineSettings() {
    }

    /** The engine's default policy: {@code retrysafe.policy.*}, sealed with the at-rest protection when it is on. */
    static OperationPolicy policy(RetrySafeProperties properties, StoredResponseProtection protection) {
        RetrySafeProperties.Policy p = properties.policy();
        return OperationPolicy.custom().retention(p.retention()).leaseTtl(p.leaseTtl())
                .waitForResult(p.waitForResult()).retryAfter(p.retryAfter())
                .protection(properties.atRest().enabled() ? protection : StoredResponseProtection.NONE).build();
    }

    /** {@code builder}: a {@code RetrySafe.Builder} or an {@code AsyncRetrySafe.Builder}. */
    static <B> B configure(B builder, RetrySafeProperties properties, StoredResponseProtection protection,
            ObjectProvider<RetrySafeListener> listeners) {
        List<RetrySafeListener> all = listeners.orderedStream().toList();
        return Engines.configure(builder, properties.name(), policy(properties, protection),
                all.isEmpty() ? null : all.size() == 1 ? all.get(0) : new CompositeListener(all),
                properties.failOpen(), properties.completion().attempts(), properties.completion().backoff());
    }
}
