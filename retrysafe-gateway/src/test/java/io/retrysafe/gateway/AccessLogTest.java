package io.retrysafe.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.IdempotencyKey;
import org.junit.jupiter.api.Test;

class AccessLogTest {

    @Test
    void aKeyIsLoggedAsItsDigestNeverRaw() {
        String key = "4f6c2d8e-payment-of-order-1234";

        assertThat(AccessLog.digest(key)).isEqualTo(IdempotencyKey.of("access-log", key).digest())
                .hasSize(12).doesNotContain("4f6c2d8e").doesNotContain("1234");
        assertThat(AccessLog.digest(key)).as("stable for one key").isEqualTo(AccessLog.digest(key));
        assertThat(AccessLog.digest(null)).isEqualTo("-");
        assertThat(AccessLog.digest("")).isEqualTo("invalid");
    }
}
