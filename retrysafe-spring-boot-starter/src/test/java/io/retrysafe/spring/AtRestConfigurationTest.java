package io.retrysafe.spring;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.retrysafe.AesGcmProtection;
import io.retrysafe.IdempotencyKey;
import io.retrysafe.RetrySafe;
import io.retrysafe.StoredResponse;
import io.retrysafe.StoredResponseProtection;
import io.retrysafe.servlet.HttpIdempotency;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

/** {@code retrysafe.at-rest.*}: what the engine and the routes get, and what stops the application at start-up. */
class AtRestConfigurationTest {
    private static final String K16 = Base64.getEncoder().encodeToString(new byte[16]);
    private static final String K32 = Base64.getEncoder().encodeToString(new byte[32]);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, RetrySafeAutoConfiguration.class));
    private final WebApplicationContextRunner web = new WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(BootLine.JACKSON, RetrySafeAutoConfiguration.class,
                    RetrySafeWebAutoConfiguration.class))
            .withPropertyValues("retrysafe.http.scope=global");

    @Test
    void withoutKeysNothingIsEncrypted() {
        runner.run(context -> assertThat(context.getBean(RetrySafe.class).policy().protection())
                .isSameAs(StoredResponseProtection.NONE));
    }

    @Test
    void keysEncryptTheEnginesPolicyWithTheCurrentKey() {
        runner.withPropertyValues("retrysafe.at-rest.keys.old=" + K16, "retrysafe.at-rest.keys.new=" + K32,
                "retrysafe.at-rest.current-key=new").run(context -> {
                    StoredResponseProtection protection = context.getBean(RetrySafe.class).policy().protection();
                    assertThat(protection).isInstanceOf(AesGcmProtection.class);
                    assertThat(((AesGcmProtection) protection).currentKey()).isEqualTo("new");
                    IdempotencyKey key = IdempotencyKey.of("s", "k");
                    StoredResponse sealed = protection.seal(key, StoredResponse.of(200, "secret".getBytes(UTF_8)));
                    assertThat(new String(sealed.body(), UTF_8)).doesNotContain("secret");
                });
    }

    @Test
    void aRouteMayTurnEncryptionOnOrOffForItself() {
        web.withPropertyValues("retrysafe.at-rest.keys.k=" + K16, "retrysafe.at-rest.current-key=k",
                "retrysafe.at-rest.enabled=false",
                "retrysafe.http.routes[0].method=POST", "retrysafe.http.routes[0].pattern=/cards",
                "retrysafe.http.routes[0].at-rest=true",
                "retrysafe.http.routes[1].method=POST", "retrysafe.http.routes[1].pattern=/notes").run(context -> {
                    assertThat(context.getBean(RetrySafe.class).policy().protection())
                            .isSameAs(StoredResponseProtection.NONE);
                    HttpIdempotency http = context.getBean(HttpIdempotency.class);
                    assertThat(http.routes().get(0).policy().orElseThrow().protection())
                            .isInstanceOf(AesGcmProtection.class);
                    assertThat(http.routes().get(1).policy()).as("the engine's policy").isEmpty();
                });
    }

    @Test
    void aKeyOfAWrongLengthStopsTheStart() {
        runner.withPropertyValues("retrysafe.at-rest.keys.k=" + Base64.getEncoder().encodeToString(new byte[20]),
                "retrysafe.at-rest.current-key=k").run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessage("retrysafe.at-rest.keys.k: key \"k\" must have 16, 24 or 32 bytes (AES-128, AES-192 "
                                + "or AES-256), but had 20"));
    }

    @Test
    void aKeyThatIsNotBase64StopsTheStart() {
        runner.withPropertyValues("retrysafe.at-rest.keys.k=not base64!", "retrysafe.at-rest.current-key=k")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessageStartingWith("retrysafe.at-rest.keys.k must be base64, but is not"));
    }

    @Test
    void aCurrentKeyThatIsNotConfiguredStopsTheStart() {
        runner.withPropertyValues("retrysafe.at-rest.keys.a=" + K16, "retrysafe.at-rest.current-key=b")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessage("retrysafe.at-rest.current-key must be one of the ids in retrysafe.at-rest.keys "
                                + "[a], but was b"));
        runner.withPropertyValues("retrysafe.at-rest.keys.a=" + K16)
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("retrysafe.at-rest.current-key must name the key"));
        runner.withPropertyValues("retrysafe.at-rest.current-key=b")
                .run(context -> assertThat(context).getFailure().rootCause()
                        .hasMessageContaining("but no key is configured"));
    }
}
