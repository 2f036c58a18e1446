package io.retrysafe.testservices;

import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Assumptions;

/**
 * A shared local service found through an environment variable and probed once per JVM, and the
 * rule every test service follows when one is missing: the calling test is aborted (reported as
 * skipped, with the reason), unless {@code CI=true}, where the services are mandatory and it fails.
 */
public final class SharedService {
    private static final String LOG_PREFIX = "[retrysafe-test-services] ";

    private final String name;
    private final String variable;
    private final String defaultUrl;
    private final String howToStart;
    private final Function<String, String> probe;
    private final UnaryOperator<String> shown;
    // Guarded by this; probed once.
    private String url;
    private String failure;

    /**
     * @param probe   null if the service at the URL answers, else a one-line reason
     * @param shown   the URL as messages show it (without a password)
     */
    SharedService(String name, String variable, String defaultUrl, String howToStart, Function<String, String> probe,
            UnaryOperator<String> shown) {
        this.name = name;
        this.variable = variable;
        this.defaultUrl = defaultUrl;
        this.howToStart = howToStart;
        this.probe = probe;
        this.shown = shown;
    }

    /** The configured URL once the probe passed; otherwise aborts or fails the calling test. */
    String url() {
        String resolved;
        String problem;
        synchronized (this) {
            if (url == null && failure == null) {
                String configured = env(variable, defaultUrl);
                String reason = probe.apply(configured);
                if (reason == null) {
                    url = configured;
                } else {
                    failure = name + " not reachable at " + shown.apply(configured) + ": " + reason + "; "
                            + howToStart + " or set " + variable + " (e.g. " + defaultUrl + ")";
                    log(failure + (isCi() ? " (CI=true: failing)" : " (skipping its tests)"));
                }
            }
            resolved = url;
            problem = failure;
        }
        if (resolved != null) {
            return resolved;
        }
        return unavailable(problem);
    }

    /**
     * Aborts the calling test (skipped with the reason), or fails it when {@code CI=true}: the rule for any service
     * or program a test needs and the machine lacks.
     */
    public static <T> T unavailable(String reason) {
        return unavailable(reason, isCi());
    }

    /** {@link #unavailable(String)}, with whether this is CI given, for a test of the rule itself. */
    public static <T> T unavailable(String reason, boolean ci) {
        if (ci) {
            // In CI the services are part of the contract: a silent skip would hide a broken setup.
            throw new AssertionError(reason);
        }
        return Assumptions.abort(reason);
    }

    /** Whether {@code CI=true}: every service is mandatory. */
    public static boolean isCi() {
        return "true".equalsIgnoreCase(env("CI", "").strip());
    }

    static String env(String name, String defaultValue) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? defaultValue : value;
    }

    static void log(String line) {
        System.err.println(LOG_PREFIX + line);
    }

    /** {@code SimpleName: message} on one line. */
    static String oneLine(Exception e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + (message == null ? "" : ": " + message.strip().replace('\n', ' '));
    }
}
