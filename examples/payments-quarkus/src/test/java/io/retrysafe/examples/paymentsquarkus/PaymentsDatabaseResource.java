package io.retrysafe.examples.paymentsquarkus;

import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import io.retrysafe.examples.paymentstesting.PaymentsDatabase;
import io.retrysafe.testservices.TcpProxy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.net.URI;
import java.util.Map;

/**
 * The service's database for its tests: the payments schema of the shared test PostgreSQL
 * ({@code RETRYSAFE_PG_URL}), reached through a proxy a test can cut ({@link Proxy}), with a short acquisition
 * timeout so that a cut store answers 503 quickly.
 */
public class PaymentsDatabaseResource implements QuarkusTestResourceLifecycleManager {
    /** Marks the test's {@link TcpProxy} field, which this resource fills in. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.FIELD)
    public @interface Proxy {
    }

    private TcpProxy proxy;

    @Override
    public Map<String, String> start() {
        String url = PaymentsDatabase.url();
        int port = URI.create(url.substring("jdbc:".length())).getPort();
        try {
            proxy = new TcpProxy(port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return Map.of("quarkus.datasource.jdbc.url", url.replace(":" + port + "/", ":" + proxy.port() + "/"),
                "quarkus.datasource.username", PaymentsDatabase.user(),
                "quarkus.datasource.password", PaymentsDatabase.password(),
                "quarkus.datasource.jdbc.acquisition-timeout", "2s");
    }

    @Override
    public void inject(TestInjector injector) {
        injector.injectIntoFields(proxy, new TestInjector.AnnotatedAndMatchesType(Proxy.class, TcpProxy.class));
    }

    @Override
    public void stop() {
        if (proxy != null) {
            proxy.close();
        }
    }
}
