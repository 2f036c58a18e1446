package io.retrysafe.conformance;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Objects;

/**
 * A user of a {@link ConformanceTarget}: its name, and the {@code Authorization} header that
 * authenticates it (HTTP Basic, a bearer token, whatever the target accepts).
 */
public record Credentials(String name, String authorization) {

    public Credentials {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(authorization, "authorization");
    }

    /** HTTP Basic credentials. */
    public static Credentials basic(String user, String password) {
        return new Credentials(user, basicAuthorization(user, password));
    }

    /** The {@code Authorization} value of HTTP Basic for this user and password. */
    public static String basicAuthorization(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }
}
