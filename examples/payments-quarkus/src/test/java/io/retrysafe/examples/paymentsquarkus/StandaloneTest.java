package io.retrysafe.examples.paymentsquarkus;

import io.quarkus.test.common.WithTestResource;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.util.Map;

/** Standalone mode: the key commits before the payment runs, the answer after. */
@QuarkusTest
@TestProfile(StandaloneTest.Standalone.class)
@WithTestResource(PaymentsDatabaseResource.class)
class StandaloneTest extends PaymentsOverQuarkus {

    /** {@code retrysafe.mode=standalone}. */
    public static class Standalone implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("retrysafe.mode", "standalone");
        }
    }
}
