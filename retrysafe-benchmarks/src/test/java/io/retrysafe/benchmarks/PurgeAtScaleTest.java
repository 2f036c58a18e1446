package io.retrysafe.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.jdbc.JdbcLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** PurgeAtScale's options; the benchmark itself runs by hand, on a quiet machine. */
class PurgeAtScaleTest {

    @Test
    void unpacedByDefault() {
        PurgeAtScale.Options o = PurgeAtScale.Options.parse(new String[0]);
        assertThat(o.dutyCycles()).containsExactly(1.0);
        assertThat(o.layouts()).containsExactly(JdbcLayout.STANDARD, JdbcLayout.PARTITIONED_BY_EXPIRY_DAY);
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
}
