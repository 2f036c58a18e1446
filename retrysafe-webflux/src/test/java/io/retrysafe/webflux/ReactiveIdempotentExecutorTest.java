package io.retrysafe.webflux;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.Fingerprint;
import io.retrysafe.InMemoryIdempotencyStore;
import io.retrysafe.KeyRules;
import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

class ReactiveIdempotentExecutorTest {

    @Test
    void standaloneRunsTheHandlerInTheCallersReactorContext() {
        ReactiveIdempotentExecutor standalone = ReactiveIdempotentExecutor.standalone(
                AsyncRetrySafe.builder(new InMemoryIdempotencyStore().async()).build());

        Outcome<StoredResponse> outcome = standalone.execute(null, KeyRules.DEFAULT.key("test", "k-1"),
                        Fingerprint.sha256("{}".getBytes(UTF_8)), null,
                        Mono.deferContextual(context -> Mono.just(StoredResponse.of(201, Map.of(),
                                context.<String>get("caller").getBytes(UTF_8)))))
                .contextWrite(Context.of("caller", "alice"))
                .block(Duration.ofSeconds(30));

        assertThat(outcome).isInstanceOfSatisfying(Outcome.Executed.class,
                executed -> assertThat(((StoredResponse) executed.value()).body()).isEqualTo("alice".getBytes(UTF_8)));
    }
}
