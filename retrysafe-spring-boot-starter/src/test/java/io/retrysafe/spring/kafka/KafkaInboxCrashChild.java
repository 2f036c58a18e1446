package io.retrysafe.spring.kafka;

import io.retrysafe.testservices.ChildJvm;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

/**
 * The test application in a JVM of its own, with {@code test.crash-after-commit=true}: the orders
 * listener's first record commits its transaction (booking and message id), prints
 * {@value KafkaInboxTestApp#COMMITTED} and the message id, and then blocks the consumer thread for
 * good, before the call returns to the container: the offset is never committed.
 * {@link KafkaInboxCrashIT} kills the process with SIGKILL.
 *
 * <pre>
 * KafkaInboxCrashChild --spring.kafka.bootstrap-servers=… --spring.datasource.url=… …
 * </pre>
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts.
 */
public final class KafkaInboxCrashChild {
    private KafkaInboxCrashChild() {
    }

    public static void main(String[] args) {
        ChildJvm.haltWhenParentDies();
        new SpringApplicationBuilder(KafkaInboxTestApp.class).web(WebApplicationType.NONE)
                .properties("test.crash-after-commit=true").run(args);
    }
}
