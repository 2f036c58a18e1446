package io.retrysafe.http;

import io.retrysafe.OperationPolicy;
import io.retrysafe.internal.Fingerprinter;
import io.retrysafe.internal.Require;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * A method and path pattern a filter protects, with its own rules. Patterns match the path
 * inside the application (without the context path), percent-decoded and normalised (no path
 * parameters, dot or empty segments), as the server dispatches it: literal segments,
 * {@code {name}} for one segment, and a final {@code **} for any rest.
 *
 * <pre>{@code
 * HttpRoute.of("POST", "/payments").keyRequired(true).jsonMembers("/amount", "/account").build()
 * }</pre>
 */
public final class HttpRoute {
    // No '*' in a literal: "/a/**/b" or "/files/*.json" would otherwise be taken literally (or "**" as
    // "any rest" in the middle) and silently protect something other than what was written.
    private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9._~!$&'()+,;=:@%-]+|\\{[A-Za-z0-9_]+\\}");

    private final String method;
    private final String pattern;
    private final String[] segments;
    private final boolean keyRequired;
    private final OperationPolicy policy;
    private final List<String> jsonMembers;
    private final List<String> fingerprintHeaders;
    /** Made once per route: its JSON members, or the whole body, canonical when it is JSON. */
    private final Fingerprinter fingerprinter;

    private HttpRoute(Builder b) {
        this.method = b.method;
        this.pattern = b.pattern;
        this.segments = b.segments;
        this.keyRequired = b.keyRequired == null || b.keyRequired;
        this.policy = b.policy;
        this.jsonMembers = b.jsonMembers == null ? List.of() : b.jsonMembers;
        this.fingerprintHeaders = b.fingerprintHeaders == null ? List.of() : b.fingerprintHeaders;
        this.fingerprinter = jsonMembers.isEmpty() ? Fingerprinter.canonicalJson()
                : Fingerprinter.canonicalJson(jsonMembers);
    }

    public static Builder of(String method, String pattern) {
        return new Builder(method, pattern);
    }

    public String method() {
        return method;
    }

    public String pattern() {
        return pattern;
    }

    /** Whether a request without a key is refused ({@code 400}) or passes through unprotected. */
    public boolean keyRequired() {
        return keyRequired;
    }

    /** The route's own policy, or empty for the engine's. */
    public Optional<OperationPolicy> policy() {
        return Optional.ofNullable(policy);
    }

    /** JSON Pointers of the members the fingerprint covers; empty for the whole body. */
    public List<String> jsonMembers() {
        return jsonMembers;
    }

    /**
     * Lower-case names of the request headers the fingerprint covers besides the request line, content type and
     * body (an account header, a currency); empty for none.
     */
    public List<String> fingerprintHeaders() {
        return fingerprintHeaders;
    }

    Fingerprinter fingerprinter() {
        return fingerprinter;
    }

    /** Whether this route protects a request of this method on this path (percent-decoded and normalised). */
    public boolean matches(String requestMethod, String path) {
        // Every request asks this of each route until one matches: read in place, no spelling built.
        return walk(requestMethod, path, false, null);
    }

    /**
     * The path as this route spells it, when the route protects a request of this method on this path: its literal
     * segments as the pattern writes them, the others as given, no trailing '/' unless a final {@code **} took it.
     * Null when the route does not match. With {@code ignoreCase}, the method and the literal segments match in any
     * case, as servers that route case-insensitively dispatch them; a proxy that forwards the spelling then sends
     * the upstream the path it matched.
     */
    public String spelling(String requestMethod, String path, boolean ignoreCase) {
        StringBuilder spelled = new StringBuilder(path.length());
        if (!walk(requestMethod, path, ignoreCase, spelled)) {
            return null;
        }
        return spelled.length() == 0 ? "/" : spelled.toString();
    }

    /** The one rule both ask: whether the route matches, spelling the path into {@code spelled} when given one. */
    private boolean walk(String requestMethod, String path, boolean ignoreCase, StringBuilder spelled) {
        if (ignoreCase ? !method.equalsIgnoreCase(requestMethod) : !method.equals(requestMethod)) {
            return false;
        }
        int n = path.length();
        int slash = path.indexOf('/');
        int at = slash < 0 ? -1 : slash + 1; // where the path's next segment starts; -1 when it has no more
        for (String segment : segments) {
            if (segment.equals("**")) {
                if (spelled != null && at >= 0) {
                    spelled.append(path, at - 1, n); // the rest as given, from the '/' before it
                }
                return true;
            }
            if (at < 0) {
                return false;
            }
            int next = path.indexOf('/', at);
            int end = next < 0 ? n : next;
            boolean literal = !segment.startsWith("{");
            if (end == at || (literal && !(segment.length() == end - at
                    && path.regionMatches(ignoreCase, at, segment, 0, end - at)))) {
                return false;
            }
            if (spelled != null) {
                spelled.append('/');
                if (literal) {
                    spelled.append(segment);
                } else {
                    spelled.append(path, at, end);
                }
            }
            at = next < 0 ? -1 : next + 1;
        }
        return at < 0 || at == n; // the path ends here, or with one '/' more
    }

    @Override
    public String toString() {
        return method + " " + pattern;
    }

    public static final class Builder {
        private final String method;
        private final String pattern;
        private final String[] segments;
        private Boolean keyRequired;
        private OperationPolicy policy;
        private List<String> jsonMembers;
        private List<String> fingerprintHeaders;

        private Builder(String method, String pattern) {
            Require.notNull(method, "method");
            Require.notNull(pattern, "pattern");
            this.method = method.toUpperCase(Locale.ROOT);
            if (!this.method.matches("[A-Z]+")) {
                throw new IllegalArgumentException("method must be an HTTP method name, but was \"" + method + "\"");
            }
            if (!pattern.startsWith("/")) {
                throw new IllegalArgumentException("pattern must start with '/', but was \"" + pattern + "\"");
            }
            String[] s = pattern.equals("/") ? new String[0] : pattern.substring(1).split("/", -1);
            for (int i = 0; i < s.length; i++) {
                boolean last = i == s.length - 1;
                if (!(last && s[i].equals("**")) && !SEGMENT.matcher(s[i]).matches()) {
                    throw new IllegalArgumentException("pattern segments must be literal, {name}, or a final **, but "
                            + "was \"" + pattern + "\"");
                }
            }
            this.pattern = pattern;
            this.segments = s;
        }

        public Builder keyRequired(boolean keyRequired) {
            Require.unset(this.keyRequired, "keyRequired");
            this.keyRequired = keyRequired;
            return this;
        }

        public Builder policy(OperationPolicy policy) {
            Require.unset(this.policy, "policy");
            this.policy = Require.notNull(policy, "policy");
            return this;
        }

        /** Fingerprint only these JSON members (RFC 6901 pointers), so that clients may vary the rest. */
        public Builder jsonMembers(String... pointers) {
            Require.unset(this.jsonMembers, "jsonMembers");
            for (String p : pointers) {
                if (p == null || !(p.isEmpty() || p.startsWith("/"))) {
                    throw new IllegalArgumentException("a JSON Pointer is empty or starts with '/', but was " + p);
                }
            }
            this.jsonMembers = List.of(pointers);
            return this;
        }

        /**
         * Fingerprint these request headers too: a retry with another value under the same key is refused
         * {@code 422}. Their values count as sent (several field lines in order); an absent header counts too.
         */
        public Builder fingerprintHeaders(String... names) {
            Require.unset(this.fingerprintHeaders, "fingerprintHeaders");
            TreeSet<String> lower = new TreeSet<>();
            for (String n : names) {
                if (n == null || !n.matches("[A-Za-z0-9!#$%&'*+.^_`|~-]+")) {
                    throw new IllegalArgumentException("a header name is a token, but was " + n);
                }
                lower.add(n.toLowerCase(Locale.ROOT));
            }
            this.fingerprintHeaders = List.copyOf(lower);
            return this;
        }

        public HttpRoute build() {
            return new HttpRoute(this);
        }
    }
}
