package io.retrysafe.gateway;

import io.retrysafe.internal.Hex;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiPredicate;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The caller named by HTTP Basic credentials that match a users file: one {@code name:bcrypt-hash} line per user
 * ({@code htpasswd -nbB name password} writes one), blank lines and {@code #} comments ignored. A request without
 * credentials, or with wrong ones, has no caller ({@code 401}).
 *
 * <p>A bcrypt check costs tens of milliseconds by design, so three things keep it from being a lever for an attacker:
 * an unknown user is checked against a hash of the file's highest cost, so that a wrong password and an unknown user
 * take the same time (no user enumeration by timing); credentials already checked, right or wrong, are remembered by
 * their SHA-256 (never the password itself), up to {@value #MAX_REMEMBERED} of each before that memory starts over,
 * so that retries and repeated guesses cost nothing, and requests that bring the same credentials while they are
 * being checked wait for that one check (clients starting together, a guess sent many times at once); and at most
 * half the processors check passwords at once, the other checks waiting their turn, so that a flood of new guesses
 * cannot take the CPU from the requests of callers already checked.
 */
final class BasicAuthScope implements Callers {
    static final int MAX_REMEMBERED = 10_000;

    private final Map<String, String> hashes;
    private final String unknownUserHash;
    private final BiPredicate<String, String> check;
    private final Semaphore checks;
    private final Map<String, String> verified = new ConcurrentHashMap<>();
    private final Set<String> refused = ConcurrentHashMap.newKeySet();
    /** Checks under way, by the same digest: whether the credentials match. */
    private final Map<String, CompletableFuture<Boolean>> checking = new ConcurrentHashMap<>();
    private final Checks made;

    /**
     * The bcrypt checks made, by outcome, counted for the admin port's meter (a flood of guesses shows there): one
     * count for all of a gateway's Basic scopes, held by each of them.
     */
    static final class Checks {
        private final LongAdder matched = new LongAdder();
        private final LongAdder refused = new LongAdder();

        long made(boolean matching) {
            return (matching ? matched : refused).sum();
        }
    }

    /** @param check whether a password matches a bcrypt hash; at most {@code concurrentChecks} run at once */
    BasicAuthScope(Map<String, String> hashes, BiPredicate<String, String> check, int concurrentChecks) {
        this(hashes, check, concurrentChecks, new Checks());
    }

    private BasicAuthScope(Map<String, String> hashes, BiPredicate<String, String> check, int concurrentChecks,
            Checks made) {
        this.made = made;
        this.hashes = Map.copyOf(hashes);
        this.check = check;
        this.checks = new Semaphore(concurrentChecks);
        int cost = hashes.values().stream().mapToInt(h -> Integer.parseInt(h.substring(4, 6))).max().orElse(10);
        this.unknownUserHash = BCrypt.hashpw(UUID.randomUUID().toString(), BCrypt.gensalt(cost));
    }

    static BasicAuthScope fromFile(Path file) {
        return fromFile(file, new Checks());
    }

    /** The scope of a users file, its checks counted in {@code made}. */
    static BasicAuthScope fromFile(Path file, Checks made) {
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
        return new BasicAuthScope(hashes, BasicAuthScope::checkpw,
                Math.max(1, Runtime.getRuntime().availableProcessors() / 2), made);
    }

    private static boolean checkpw(String password, String hash) {
        try {
            return BCrypt.checkpw(password, hash);
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    @Override
    public String caller(Headers headers) {
        return authenticate(headers.get("Authorization"));
    }

    /** At once when the credentials need no check: none, not Basic, or checked before (right or wrong). */
    @Override
    public AtOnce callerAtOnce(Headers headers) {
        Presented presented = presented(headers.get("Authorization"));
        if (presented == null) {
            return AtOnce.NOBODY;
        }
        Boolean known = remembered(presented.seen(), presented.hash());
        return known == null ? null : known ? new AtOnce(presented.user()) : AtOnce.NOBODY;
    }

    @Override
    public String scope(String caller) {
        return "user:" + caller;
    }

    @Override
    public String challenge() {
        return "Basic realm=\"" + REALM + "\", charset=\"UTF-8\"";
    }

    /**
     * Basic credentials as presented: the user, the password, the hash on file for the user (null: unknown), and what
     * the check's answer is remembered by (a digest of both, never the password itself).
     */
    private record Presented(String user, String password, String hash, String seen) {
    }

    /** The header's credentials, or null when it holds none. */
    private Presented presented(String authorization) {
        String decoded = decoded(authorization);
        if (decoded == null) {
            return null;
        }
        int colon = decoded.indexOf(':');
        String user = decoded.substring(0, colon);
        return new Presented(user, decoded.substring(colon + 1), hashes.get(user), Hex.encode(Hex.sha256(decoded)));
    }

    /** The header's {@code user:password}, or null when it holds none. */
    private static String decoded(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            return null;
        }
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(authorization.substring(6).strip()), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return null;
        }
        return decoded.indexOf(':') < 1 ? null : decoded;
    }

    /** The user the header's credentials belong to, or null. */
    String authenticate(String authorization) {
        Presented presented = presented(authorization);
        if (presented == null) {
            return null;
        }
        String user = presented.user();
        String hash = presented.hash();
        String seen = presented.seen();
        Boolean known = remembered(seen, hash);
        if (known != null) {
            return known ? user : null;
        }
        CompletableFuture<Boolean> mine = new CompletableFuture<>();
        CompletableFuture<Boolean> under = checking.putIfAbsent(seen, mine);
        if (under != null) {
            try {
                return under.join() ? user : null;
            } catch (CompletionException | CancellationException e) {
                return null; // that check was interrupted: the gateway is stopping
            }
        }
        try {
            // A check that ended between the look-up above and the one just made is remembered: none again.
            known = remembered(seen, hash);
            boolean matches = known != null ? known : check(presented.password(), hash, seen);
            mine.complete(matches);
            return matches ? user : null;
        } catch (CancellationException e) {
            mine.completeExceptionally(e);
            return null;
        } catch (RuntimeException | Error e) {
            mine.completeExceptionally(e);
            throw e;
        } finally {
            checking.remove(seen, mine);
        }
    }

    /** Whether these credentials were found right or wrong before, or null when they were not checked. */
    private Boolean remembered(String seen, String hash) {
        if (hash != null && hash.equals(verified.get(seen))) {
            return true;
        }
        return refused.contains(seen) ? false : null;
    }

    /** The bcrypt check, one of at most the permitted number at once, and its answer remembered. */
    private boolean check(String password, String hash, String seen) {
        boolean matches;
        try {
            checks.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancellationException("interrupted while waiting to check a password");
        }
        try {
            // An unknown user costs what a wrong password costs.
            matches = check.test(password, hash == null ? unknownUserHash : hash) && hash != null;
        } finally {
            checks.release();
        }
        (matches ? made.matched : made.refused).increment();
        // Remembered before the waiters are answered and the check is no longer under way: a request that
        // comes between them finds one or the other.
        if (!matches) {
            if (refused.size() >= MAX_REMEMBERED) {
                refused.clear();
            }
            refused.add(seen);
        } else {
            if (verified.size() >= MAX_REMEMBERED) {
                verified.clear();
            }
            verified.put(seen, hash);
        }
        return matches;
    }
}
