package io.retrysafe.redis.internal;

import io.lettuce.core.ScriptOutputType;
import io.retrysafe.internal.Hex;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * One of the Lua scripts shipped in {@code io/retrysafe/redis/*.lua}: its source, which is sent with
 * {@code SCRIPT LOAD}, and its SHA-1, by which every call names it ({@code EVALSHA}). The SHA-1 is
 * computed here exactly as Redis computes it, so it is known before any server has seen the script.
 */
public enum Script {
    CLAIM("claim.lua", ScriptOutputType.MULTI),
    COMPLETE("complete.lua", ScriptOutputType.INTEGER),
    RELEASE("release.lua", ScriptOutputType.INTEGER),
    RENEW("renew.lua", ScriptOutputType.INTEGER),
    /** The fast filter's: what a key holds, or the in-flight marker set when it holds nothing. */
    FAST_FILTER_LOOKUP_OR_MARK("fast-filter-lookup-or-mark.lua", ScriptOutputType.VALUE),
    /** The fast filter's: removes an in-flight marker, never a cached response. */
    FAST_FILTER_CLEAR("fast-filter-clear.lua", ScriptOutputType.INTEGER);

    /** The store's scripts, which it loads on every new connection. */
    public static final List<Script> STORE = List.of(CLAIM, COMPLETE, RELEASE, RENEW);
    /** The fast filter's scripts, which it loads on every new connection. */
    public static final List<Script> FAST_FILTER = List.of(FAST_FILTER_LOOKUP_OR_MARK, FAST_FILTER_CLEAR);

    private final String resource;
    private final ScriptOutputType output;
    private final byte[] source;
    private final String sha;

    Script(String resource, ScriptOutputType output) {
        this.resource = resource;
        this.output = output;
        this.source = read(resource);
        this.sha = sha1(source);
    }

    /** The resource's name under {@code io/retrysafe/redis/}. */
    public String resource() {
        return resource;
    }

    public ScriptOutputType output() {
        return output;
    }

    /** The Lua source as UTF-8 (a copy). */
    public byte[] source() {
        return source.clone();
    }

    /** The lower-case hex SHA-1 of the source: the name {@code EVALSHA} and {@code SCRIPT EXISTS} use. */
    public String sha() {
        return sha;
    }

    private static byte[] read(String resource) {
        try (InputStream in = Script.class.getResourceAsStream("/io/retrysafe/redis/" + resource)) {
            if (in == null) {
                throw new IllegalStateException("Lua script io/retrysafe/redis/" + resource + " is missing from the jar");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read Lua script io/retrysafe/redis/" + resource, e);
        }
    }

    private static String sha1(byte[] bytes) {
        try {
            return Hex.encode(MessageDigest.getInstance("SHA-1").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform provides SHA-1", e);
        }
    }
}
