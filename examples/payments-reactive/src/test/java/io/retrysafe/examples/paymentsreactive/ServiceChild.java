package io.retrysafe.examples.paymentsreactive;

import io.retrysafe.testservices.ChildJvm;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The service as a test's child JVM ({@link ChildJvm}): started by its main class with the test's
 * arguments, it prints {@code PORT <port>} once it serves, and halts when the test JVM is gone.
 */
public final class ServiceChild {
    static final String READY = "PORT";

    private ServiceChild() {
    }

    public static void main(String[] args) {
        ChildJvm.haltWhenParentDies();
        ConfigurableApplicationContext context = SpringApplication.run(PaymentsReactiveApplication.class, args);
        System.out.println(READY + " " + ((WebServerApplicationContext) context).getWebServer().getPort());
    }
}
