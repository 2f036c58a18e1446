package io.retrysafe.testservices;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nats.client.Connection;
import org.junit.jupiter.api.Test;

class TestNatsIT {

    @Test
    void connectsWithJetStream() throws Exception {
        // Skipped with a reason when NATS is down, failed instead when CI=true.
        Connection c = TestNats.connect("retrysafe-test-nats-it");
        try {
            assertThat(c.getStatus()).isEqualTo(Connection.Status.CONNECTED);
            assertThat(c.getServerInfo().isJetStreamAvailable()).isTrue();
        } finally {
            c.close();
        }
    }

    @Test
    void uniqueNamesAreValidStreamNamesAndDiffer() {
        String a = TestNats.uniqueName("rs_it");
        String b = TestNats.uniqueName("rs_it");
        assertThat(a).matches("RS_IT_[0-9A-F]{12}").isNotEqualTo(b);
        assertThatThrownBy(() -> TestNats.uniqueName("has.dot")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was has.dot");
    }
}
