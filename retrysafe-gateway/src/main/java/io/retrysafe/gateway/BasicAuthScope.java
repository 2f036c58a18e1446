package io.retrysafe.gateway;

import io.retrysafe.internal.Hex;
import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.http.HttpServletRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The caller named by HTTP Basic credentials that match a users file: one {@code name:bcrypt-hash} line per user
 * ({@code htpasswd -nbB name password} writes one), blank lines and {@code #} comments ignored. A request without
 * credentials, or with wrong ones, has no caller ({@code 401}).
 *
 * <p>A bcrypt check costs tens of milliseconds by design; credentials already checked are remembered by their
 * SHA-256 (never the password itself), so that a caller's retries do not pay it again. The memory is bounded:
 * past {@value #MAX_REMEMBERED} entries it starts over.
 */
final class BasicAuthScope implements ScopeResolver {
    static final int MAX_REMEMBERED = 10_000;

    private final Map<String, String> hashes;
    private final Map<String, String> verified = new ConcurrentHashMap<>();

    private BasicAuthScope(Map<String, String> hashes) {
        this.hashes = hashes;
    }

    static BasicAuthScope fromFile(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConfigException(file.toString(), 0, 0, "cannot read the users file: " + e);
        }
        Map<String, String> hashes = new HashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int colon = line.indexOf(':');
            String hash = colon < 0 ? "" : line.substring(colon + 1);
            if (colon < 1 || !hash.matches("\\$2[abxy]?\\$\\d\\d\\$[./A-Za-z0-9]{53}")) {
                throw new ConfigException(file.toString(), i + 1, 1, "a users file line is name:bcrypt-hash "
                        + "(such as htpasswd -nbB writes), but this one is not");
            }
            // htpasswd writes $2y$, the same algorithm as $2a$, which BCrypt checks.
            if (hashes.put(line.substring(0, colon), hash.replaceFirst("^\\$2[xy]\\$", "\\$2a\\$")) != null) {
                throw new ConfigException(file.toString(), i + 1, 1, "user " + line.substring(0, colon)
                        + " is listed twice");
            }
        }
        if (hashes.isEmpty()) {
            throw new ConfigException(file.toString(), 0, 0, "the users file lists no user");
        }
        return new BasicAuthScope(Map.copyOf(hashes));
    }

    @Override
    public String resolve(HttpServletRequest request) {
        String user = authenticate(request.getHeader("Authorization"));
        return user == null ? null : "user:" + user;
    }

    /** The user the header's credentials belong to, or null. */
    String authenticate(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            return null;
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(authorization.substring(6).strip()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return null;
        }
        int colon = decoded.indexOf(':');
        if (colon < 1) {
            return null;
        }
        String user = decoded.substring(0, colon);
        String hash = hashes.get(user);
        if (hash == null) {
            return null;
        }
        String seen = Hex.encode(Hex.sha256(decoded));
        if (hash.equals(verified.get(seen))) {
            return user;
        }
        boolean matches;
        try {
            matches = BCrypt.checkpw(decoded.substring(colon + 1), hash);
        } catch (IllegalArgumentException e) {
            return null;
        }
        if (!matches) {
            return null;
        }
        if (verified.size() >= MAX_REMEMBERED) {
            verified.clear();
        }
        verified.put(seen, hash);
        return user;
    }
}
