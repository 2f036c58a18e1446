package io.retrysafe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.internal.Engines;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** What RetrySafe's modules reach through {@link Engines}: an engine's own keys in flight, its builder's settings. */
class EnginesTest {

    @Test
    void modulesSetABuildersSettingsAndReachTheKeysInFlightTheEngineAndItsCopiesShare() {
        RetrySafe engine = Engines.configure(RetrySafe.builder(new InMemoryIdempotencyStore()), "payments",
                OperationPolicy.ofDefaults(), null, true, 3, Duration.ofMillis(20)).build();

        assertThat(engine.name()).isEqualTo("payments");
        assertThat(engine.failOpen()).isTrue();
        assertThat(Engines.inFlight(engine)).isSameAs(engine.inFlight())
                .isSameAs(Engines.inFlight(engine.with(OperationPolicy.ofDefaults())));
    }

    @Test
    void theAccessIsSetOnceByCoreAndCannotBeReplaced() {
        RetrySafe.builder(new InMemoryIdempotencyStore()); // core's builders are loaded: the access is set

        assertThatThrownBy(() -> Engines.access(null)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("set once");
    }
}
