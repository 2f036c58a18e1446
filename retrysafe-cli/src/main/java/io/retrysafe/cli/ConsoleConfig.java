package io.retrysafe.cli;

import java.net.InetSocketAddress;
import java.time.Clock;

/**
 * What the console serves and to whom, fixed at start.
 *
 * @param address where it listens; loopback unless the operator allowed more
 * @param token the access token every request must carry (query on the first visit, then a cookie)
 * @param revealKeys whether a record page may show its raw key when asked
 * @param clock the console's clock, for telling a lease that ran out (the store keeps its own)
 */
record ConsoleConfig(InetSocketAddress address, String token, boolean revealKeys, Clock clock) {
    /** The shortest access token accepted from an option or the environment. */
    static final int MIN_TOKEN_LENGTH = 16;

    ConsoleConfig {
        if (token == null || token.length() < MIN_TOKEN_LENGTH) {
            throw new IllegalArgumentException("the console's access token must have at least " + MIN_TOKEN_LENGTH
                    + " characters, but had " + (token == null ? 0 : token.length()));
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c <= 0x20 || c >= 0x7f || c == ';' || c == ',' || c == '"' || c == '\\') {
                throw new IllegalArgumentException("the console's access token must be printable ASCII without "
                        + "spaces, quotes, commas, semicolons or backslashes (it travels in a cookie)");
            }
        }
    }

    @Override
    public String toString() {
        return "ConsoleConfig[address=" + address + ", revealKeys=" + revealKeys + "]"; // never the token
    }
}
