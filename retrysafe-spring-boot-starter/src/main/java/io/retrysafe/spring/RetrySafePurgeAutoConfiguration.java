package io.retrysafe.spring;

import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.jdbc.JdbcPurger;
import io.retrysafe.jdbc.PartitionMaintainer;
import io.retrysafe.jdbc.PurgeResult;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import java.time.ZoneId;
import java.util.function.Consumer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The scheduled purge of expired records, for the JDBC store; deletions and partition maintenance
 * are counted when Micrometer is there.
 */
@AutoConfiguration(after = {RetrySafeAutoConfiguration.class, RetrySafeMicrometerAutoConfiguration.class})
@ConditionalOnBean(JdbcIdempotencyStore.class)
@ConditionalOnProperty(prefix = "retrysafe", name = {"enabled", "purge.enabled"}, havingValue = "true",
        matchIfMissing = true)
public class RetrySafePurgeAutoConfiguration {

    static RetrySafePurgeScheduler scheduler(RetrySafeProperties properties, JdbcIdempotencyStore store,
            Consumer<PurgeResult> ran, Consumer<PartitionMaintainer.Report> maintained) {
        RetrySafeProperties.Purge p = properties.purge();
        JdbcPurger.Builder purger = store.purger().batchSize(p.batchSize()).maxDutyCycle(p.maxDutyCycle());
        if (store.layout() == JdbcLayout.PARTITIONED_BY_EXPIRY_DAY) {
            purger.maintainer(store.partitions().daysAhead(properties.store().partitionDaysAhead()).build());
        }
        return new RetrySafePurgeScheduler(purger.build(), p.cron(), ZoneId.of(p.zone()), ran, maintained);
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.retrysafe.micrometer.MicrometerRetrySafeListener")
    static class Metered {

        @Bean
        @ConditionalOnMissingBean
        RetrySafePurgeScheduler retrySafePurgeScheduler(RetrySafeProperties properties, JdbcIdempotencyStore store,
                ObjectProvider<MicrometerRetrySafeListener> metrics) {
            return scheduler(properties, store,
                    run -> metrics.ifAvailable(m -> m.recordPurge(run.deleted(), run.finished())),
                    report -> metrics.ifAvailable(m -> m.recordPartitionMaintenance(report.created().size(),
                            report.dropped().size(), report.failed().size(), report.defaultPartitionRows())));
        }
    }

    @Bean
    @ConditionalOnMissingBean
    RetrySafePurgeScheduler retrySafePurgeScheduler(RetrySafeProperties properties, JdbcIdempotencyStore store) {
        return scheduler(properties, store, run -> { }, report -> { });
    }
}
