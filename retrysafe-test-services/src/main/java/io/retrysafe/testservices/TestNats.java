package io.retrysafe.testservices;

import static io.retrysafe.testservices.SharedService.log;
import static io.retrysafe.testservices.SharedService.oneLine;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.IOException;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;

/**
 * NATS with JetStream for RetrySafe's own tests: the shared local server from
 * {@code RETRYSAFE_NATS_URL} (default {@value #DEFAULT_URL}), probed once per JVM by connecting and
 * asking for the account's JetStream statistics.
 *
 * <p>As in {@link TestDatabases}: if the server does not answer, or answers without JetStream, the
 * calling test is aborted (reported as skipped, with the reason) - unless {@code CI=true}, where
 * the services are mandatory and the test fails.
 *
 * <p>Others use that server too: a test creates streams with {@link #uniqueName(String)} names and
 * deletes them afterwards, and never touches a stream it did not create.
 */
public final class TestNats {

    static final String DEFAULT_URL = "nats://127.0.0.1:4222";

    // Short, so a missing server costs the suite seconds, not minutes.
    private static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

    private static final SharedService SERVER = new SharedService("NATS with JetStream", "RETRYSAFE_NATS_URL",
            DEFAULT_URL, "start one (nats-server -js)", TestNats::probe, url -> url);

    private TestNats() {}

    /**
     * The URL of the shared NATS server, once it answered with JetStream enabled. If it does not,
     * aborts the calling test (skipped, with the reason), or fails it when {@code CI=true}.
     */
    public static String url() {
        return SERVER.url();
    }

    /** A new connection to {@link #url()} (same skip rule), named for the test's logs; the caller closes it. */
    public static Connection connect(String connectionName) {
        Options options = new Options.Builder().server(url()).connectionName(connectionName)
                .connectionTimeout(CONNECT_TIMEOUT).build();
        try {
            return Nats.connect(options);
        } catch (IOException e) {
            throw new IllegalStateException("cannot connect to NATS at " + url() + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while connecting to NATS at " + url(), e);
        }
    }

    /**
     * A name no other test uses, valid for a stream, a consumer and a subject token (letters, digits,
     * underscore): {@code prefix} plus 12 random hex digits, upper case.
     */
    public static String uniqueName(String prefix) {
        if (prefix == null || !prefix.matches("[A-Za-z0-9_]{1,32}")) {
            throw new IllegalArgumentException(
                    "prefix must be 1 to 32 letters, digits or underscores, but was " + prefix);
        }
        return (prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12))
                .toUpperCase(Locale.ROOT);
    }

    /** Null if the server accepts a connection and answers a JetStream request, else a one-line reason. */
    private static String probe(String configured) {
        Options options;
        try {
            options = new Options.Builder().server(configured).connectionName("retrysafe-test-probe")
                    .connectionTimeout(PROBE_TIMEOUT).noReconnect().build();
        } catch (RuntimeException e) {
            return "invalid URL: " + oneLine(e);
        }
        Connection c;
        try {
            c = Nats.connect(options);
        } catch (IOException | RuntimeException e) {
            return oneLine(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while connecting";
        }
        try {
            c.jetStreamManagement(JetStreamOptions.builder().requestTimeout(PROBE_TIMEOUT).build())
                    .getAccountStatistics();
            log("NATS: using " + configured + " (reachable, server " + c.getServerInfo().getVersion()
                    + ", JetStream enabled)");
            return null;
        } catch (IOException | JetStreamApiException | RuntimeException e) {
            return "the server answers, but JetStream does not (" + oneLine(e) + ")";
        } finally {
            try {
                c.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
