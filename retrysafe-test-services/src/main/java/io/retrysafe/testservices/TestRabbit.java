package io.retrysafe.testservices;

import static io.retrysafe.testservices.SharedService.log;
import static io.retrysafe.testservices.SharedService.oneLine;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.TimeoutException;

/**
 * RabbitMQ for RetrySafe's own tests: the shared local broker from {@code RETRYSAFE_RABBITMQ_URL}
 * (default {@value #DEFAULT_URL}), probed once per JVM by opening a connection and a channel.
 *
 * <p>As in {@link TestDatabases}: if the broker does not answer, the calling test is aborted
 * (reported as skipped, with the reason) - unless {@code CI=true}, where the services are mandatory
 * and the test fails.
 *
 * <p>Others use that broker too: a test declares queues and exchanges with
 * {@link #uniqueName(String)} names and deletes them afterwards, and never touches one it did not
 * declare.
 */
public final class TestRabbit {

    static final String DEFAULT_URL = "amqp://guest:guest@127.0.0.1:5672/%2F";

    // Short, so a missing broker costs the suite seconds, not minutes.
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

    private static final SharedService BROKER = new SharedService("RabbitMQ", "RETRYSAFE_RABBITMQ_URL", DEFAULT_URL,
            "start one (rabbitmq-server -detached)", TestRabbit::probe, TestRabbit::redacted);

    private TestRabbit() {}

    /**
     * The AMQP URI of the shared broker, once it accepted a connection. If it does not, aborts the
     * calling test (skipped, with the reason), or fails it when {@code CI=true}.
     */
    public static String url() {
        return BROKER.url();
    }

    /** A connection factory for {@link #url()} (same skip rule); automatic recovery off, so that a test sees a failure. */
    public static ConnectionFactory connectionFactory() {
        ConnectionFactory factory = factory(url(), CONNECT_TIMEOUT);
        factory.setAutomaticRecoveryEnabled(false);
        return factory;
    }

    /** A new connection to {@link #url()} (same skip rule), named for the broker's connection list; the caller closes it. */
    public static Connection connect(String connectionName) {
        try {
            return connectionFactory().newConnection(connectionName);
        } catch (IOException | TimeoutException e) {
            throw new IllegalStateException("cannot connect to RabbitMQ at " + redacted(url()) + ": " + e, e);
        }
    }

    /**
     * A name no other test uses, for a queue or an exchange: {@code prefix} plus 12 random hex digits,
     * lower case.
     */
    public static String uniqueName(String prefix) {
        if (prefix == null || !prefix.matches("[A-Za-z0-9_.-]{1,32}")) {
            throw new IllegalArgumentException(
                    "prefix must be 1 to 32 letters, digits, '.', '-' or '_', but was " + prefix);
        }
        return (prefix + "-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12))
                .toLowerCase(Locale.ROOT);
    }

    /** Null if the broker accepts a connection and opens a channel, else a one-line reason. */
    private static String probe(String configured) {
        ConnectionFactory factory;
        try {
            factory = factory(configured, PROBE_TIMEOUT);
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
        factory.setAutomaticRecoveryEnabled(false);
        try (Connection c = factory.newConnection("retrysafe-test-probe")) {
            c.createChannel().close();
            log("RabbitMQ: using " + redacted(configured) + " (reachable, server "
                    + c.getServerProperties().get("version") + ")");
            return null;
        } catch (IOException | TimeoutException | RuntimeException e) {
            return oneLine(e);
        }
    }

    private static ConnectionFactory factory(String uri, Duration timeout) {
        ConnectionFactory factory = new ConnectionFactory();
        try {
            factory.setUri(uri);
        } catch (URISyntaxException | GeneralSecurityException | IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid AMQP URI " + redacted(uri) + ": " + oneLine(e), e);
        }
        factory.setConnectionTimeout((int) timeout.toMillis());
        factory.setHandshakeTimeout((int) timeout.toMillis());
        return factory;
    }

    /** The URI without its password, for messages. */
    private static String redacted(String uri) {
        try {
            URI parsed = new URI(uri);
            String userInfo = parsed.getUserInfo();
            if (userInfo == null || !userInfo.contains(":")) {
                return uri;
            }
            return uri.replace(userInfo, userInfo.substring(0, userInfo.indexOf(':')) + ":***");
        } catch (URISyntaxException e) {
            return "(an invalid URI)";
        }
    }
}
