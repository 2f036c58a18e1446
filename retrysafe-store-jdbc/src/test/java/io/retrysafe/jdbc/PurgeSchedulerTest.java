package io.retrysafe.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.time.LocalTime;
import java.time.ZoneId;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class PurgeSchedulerTest {
    private final JdbcPurger purger = JdbcIdempotencyStore.builder(unusedDataSource())
            .dialect(JdbcDialect.POSTGRESQL).build().purger().build();

    /** A data source for what must not touch the database. */
    static DataSource unusedDataSource() {
        return (DataSource) java.lang.reflect.Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    throw new AssertionError("the schedule must not touch the database");
                });
    }

    @Test
    void runsDailyAtThreeUtcByDefault() {
        PurgeScheduler scheduler = PurgeScheduler.daily(purger);
        assertThat(scheduler.nextRun(Instant.parse("2026-11-30T02:59:59Z"))).isEqualTo("2026-11-30T03:00:00Z");
        assertThat(scheduler.nextRun(Instant.parse("2026-11-30T03:00:00Z"))).isEqualTo("2026-12-01T03:00:00Z");
        assertThat(scheduler.nextRun(Instant.parse("2026-11-30T12:00:00Z"))).isEqualTo("2026-12-01T03:00:00Z");
    }

    @Test
    void aConfiguredTimeIsInItsZoneAcrossDaylightSavingChanges() {
        PurgeScheduler scheduler = PurgeScheduler.daily(purger, LocalTime.of(4, 30), ZoneId.of("Europe/Berlin"));
        // Berlin is UTC+1 in winter and UTC+2 in summer.
        assertThat(scheduler.nextRun(Instant.parse("2026-01-10T00:00:00Z"))).isEqualTo("2026-01-10T03:30:00Z");
        assertThat(scheduler.nextRun(Instant.parse("2026-07-10T00:00:00Z"))).isEqualTo("2026-07-10T02:30:00Z");
    }
}
