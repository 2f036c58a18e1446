package io.retrysafe.spring.kafka;

import io.retrysafe.inbox.PayloadBytes;
import io.retrysafe.inbox.tck.Effects;
import io.retrysafe.testservices.ChildJvm;
import java.time.Duration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

/**
 * The inbox contract's dying consumer on Spring Kafka: {@link KafkaContractApp} with
 * {@link Effects#childHandler} as its handler's work and {@link Effects#holdAfterCommit()} as its
 * inbox listener, which blocks once the first record committed, before the call returns to the
 * container (and its offset commit). {@link SpringKafkaInboxContractIT} kills it with SIGKILL.
 *
 * <pre>
 * KafkaContractChild BOOTSTRAP GROUP TOPIC SCOPE
 * </pre>
 */
public final class KafkaContractChild {

    private KafkaContractChild() {
    }

    static String[] arguments(String bootstrap, String group, String topic, String scope) {
        return new String[] {bootstrap, group, topic, scope};
    }

    public static void main(String[] args) {
        if (args.length != 4) {
            throw new IllegalArgumentException("usage: KafkaContractChild BOOTSTRAP GROUP TOPIC SCOPE, but was "
                    + args.length + " arguments");
        }
        ChildJvm.haltWhenParentDies();
        new SpringApplicationBuilder(KafkaContractApp.class).web(WebApplicationType.NONE)
                .initializers(KafkaContractApp.beans(Effects.childHandler(args[3]), PayloadBytes.STANDARD,
                        Effects.holdAfterCommit()))
                .run(SpringKafkaInboxContractIT.arguments(args[0], args[1], args[2], 1, Duration.ofMillis(200)));
    }
}
