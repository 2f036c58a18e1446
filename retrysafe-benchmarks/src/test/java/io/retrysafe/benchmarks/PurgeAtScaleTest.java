package io.retrysafe.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.testservices.TestDatabases;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/** PurgeAtScale's options and fill; the benchmark itself runs by hand, on a quiet machine. */
class PurgeAtScaleTest {

    @Test
    void unpacedByDefault() {
        PurgeAtScale.Options o = PurgeAtScale.Options.parse(new String[0]);
        assertThat(o.dutyCycles()).containsExactly(1.0);
        assertThat(o.layouts()).containsExactly(JdbcLayout.STANDARD, JdbcLayout.PARTITIONED_BY_EXPIRY_DAY);
        assertThat(o.expiryOrder()).as("filled scattered, as every run before the option").isFalse();
    }

    @Test
    void pacedAndUnpacedSideBySideAtASmallerRowCount() {
        PurgeAtScale.Options o = PurgeAtScale.Options.parse(new String[] {"--rows", "20_000", "--layouts", "standard",
            "--duty-cycle", "1, 0.5", "--baseline", "5s", "--after", "2"});
        assertThat(o.rows()).isEqualTo(20_000);
        assertThat(o.layouts()).containsExactly(JdbcLayout.STANDARD);
        assertThat(o.dutyCycles()).containsExactly(1.0, 0.5);
        assertThat(o.baseline()).hasSeconds(5);
        assertThat(o.after()).hasSeconds(2);
    }

    @Test
    void aDutyCycleOutsideZeroToOneIsRefusedBeforeTheFill() {
        for (String bad : List.of("0", "1.5", "NaN", "1,-0.5")) {
            assertThatThrownBy(() -> PurgeAtScale.Options.parse(new String[] {"--duty-cycle", bad}))
                    .as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("--duty-cycle takes shares more than 0 and at most 1, but was ");
        }
    }

    @Test
    void anUnknownFillOrderIsRefusedBeforeTheFill() {
        assertThat(PurgeAtScale.Options.parse(new String[] {"--fill-order", "expiry"}).expiryOrder()).isTrue();
        assertThatThrownBy(() -> PurgeAtScale.Options.parse(new String[] {"--fill-order", "random"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--fill-order takes scattered or expiry, but was random");
    }

    @Test
    void filledInExpiryOrderABatchOfTheOldestSharesPagesWhereScatteredItSpreadsOverTheTable() throws SQLException {
        int expiry = pagesOfTheOldestThousand("expiry");
        int scattered = pagesOfTheOldestThousand("scattered");

        assertThat(expiry).as("about a thousand rows' worth of pages").isBetween(10, 60);
        assertThat(scattered).as("against %d in expiry order", expiry).isGreaterThan(5 * expiry);
    }

    /** Fills 20,000 rows of a fresh table in that order and counts the pages of the first purge batch's rows. */
    private static int pagesOfTheOldestThousand(String order) throws SQLException {
        PurgeAtScale.Options o = PurgeAtScale.Options.parse(new String[] {"--rows", "20000", "--fill-order", order});
        String table = "rs_purge_bench_fill_" + order;
        DataSource ds = TestDatabases.postgres();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("DROP TABLE IF EXISTS " + table);
            JdbcIdempotencyStore.builder(ds).table(table).build().createSchema();
            try {
                st.execute(PurgeAtScale.fill(table, LocalDate.now(ZoneOffset.UTC), 1, o.rows(), o));
                try (ResultSet rs = st.executeQuery("SELECT count(DISTINCT (ctid::text::point)[0]) FROM (SELECT ctid FROM "
                        + table + " WHERE expires_at <= statement_timestamp() ORDER BY expires_at LIMIT 1000) b")) {
                    rs.next();
                    return rs.getInt(1);
                }
            } finally {
                st.execute("DROP TABLE IF EXISTS " + table);
            }
        }
    }
}
