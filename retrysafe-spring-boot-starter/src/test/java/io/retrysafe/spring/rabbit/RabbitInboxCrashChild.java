package io.retrysafe.spring.rabbit;

import io.retrysafe.testservices.ChildJvm;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

/**
 * The test application in a JVM of its own, with {@code test.crash-after-commit=true}: the orders
 * listener's first message commits its transaction (booking and message id), prints
 * {@value RabbitInboxTestApp#COMMITTED} and the message id, and then blocks the listener thread for
 * good, before the call returns to the container: the message is never acknowledged.
 * {@link RabbitInboxCrashIT} kills the process with SIGKILL.
 *
 * <p>Should the test JVM die first, the child notices its stdin closing and halts.
 */
public final class RabbitInboxCrashChild {
    private RabbitInboxCrashChild() {
    }

    public static void main(String[] args) {
        ChildJvm.haltWhenParentDies();
        new SpringApplicationBuilder(RabbitInboxTestApp.class).web(WebApplicationType.NONE)
                .properties("test.crash-after-commit=true").run(args);
    }
}
