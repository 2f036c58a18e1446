package io.retrysafe;

import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Function;

/**
 * A minimal property-test harness on plain JUnit Jupiter: a property is checked on inputs made from
 * seeded randoms, and a failure names the seed of the input that broke it, so that it can be rerun.
 *
 * <p>Each run starts from a new random base seed, or from {@code -Dretrysafe.seed=…} when given: the
 * first try then uses exactly that seed, so the failing input of an earlier run comes back first.
 * There is no shrinking; generators keep their inputs small enough to read, and a failure shows the
 * input (escaped, cut at {@value #SHOWN_CHARS} characters).
 */
final class Generated {
    /** Set this to the seed a failure reported to repeat its input. */
    static final String SEED_PROPERTY = "retrysafe.seed";
    private static final int SHOWN_CHARS = 600;

    private Generated() {
    }

    @FunctionalInterface
    interface Check<T> {
        void check(T input) throws Exception;
    }

    /** Checks {@code property} on {@code tries} inputs; throws an {@link AssertionError} naming the first failing seed. */
    static <T> void forAll(int tries, Function<SplittableRandom, T> generator, Check<T> property) {
        String fixed = System.getProperty(SEED_PROPERTY);
        long base = fixed != null ? Long.parseUnsignedLong(fixed.replaceFirst("^0x", ""), 16)
                : new SplittableRandom().nextLong();
        for (int i = 0; i < tries; i++) {
            long seed = i == 0 ? base : mix(base + i);
            T input = generator.apply(new SplittableRandom(seed));
            try {
                property.check(input);
            } catch (Throwable t) {
                AssertionError failure = new AssertionError("property failed on try " + (i + 1) + " of " + tries
                        + "; rerun with -D" + SEED_PROPERTY + "=" + hex(seed) + "\ninput: " + show(input) + "\n" + t, t);
                throw failure;
            }
        }
    }

    static String hex(long seed) {
        return "0x" + Long.toHexString(seed);
    }

    /** SplitMix64's finaliser: neighbouring try numbers give unrelated seeds. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** The input as Java-escaped text, so that control characters and non-ASCII are visible. */
    static String show(Object input) {
        String s = input instanceof byte[] bytes ? bytesToString(bytes) : String.valueOf(input);
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < s.length() && out.length() < SHOWN_CHARS; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7f && c != '\\') {
                out.append(c);
            } else {
                out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            }
        }
        return s.length() > SHOWN_CHARS ? out + "… (" + s.length() + " chars)" : out.toString();
    }

    private static String bytesToString(byte[] bytes) {
        StringBuilder out = new StringBuilder("bytes[").append(bytes.length).append("] ");
        for (int i = 0; i < bytes.length && i < SHOWN_CHARS / 2; i++) {
            int b = bytes[i] & 0xff;
            if (b >= 0x20 && b < 0x7f && b != '\\') {
                out.append((char) b);
            } else {
                out.append(String.format(Locale.ROOT, "\\x%02x", b));
            }
        }
        return out.toString();
    }

    // ---- generators

    /** A length biased to the small and to the given edges (each edge, one below, one above). */
    static int length(SplittableRandom r, int max, int... edges) {
        int pick = r.nextInt(10);
        if (pick < 3 && edges.length > 0) {
            int edge = edges[r.nextInt(edges.length)] + r.nextInt(3) - 1;
            return Math.max(0, Math.min(max, edge));
        }
        if (pick < 7) {
            return r.nextInt(Math.min(max, 16) + 1);
        }
        return r.nextInt(max + 1);
    }

    /** One char from a mix that hits the interesting classes: printable ASCII, its neighbours, Latin-1, BMP, surrogates. */
    static char anyChar(SplittableRandom r) {
        return switch (r.nextInt(10)) {
            case 0, 1, 2, 3, 4 -> (char) r.nextInt(0x20, 0x7f);
            case 5 -> "\"\\, \t;=".charAt(r.nextInt(7));
            case 6 -> (char) r.nextInt(0x20);
            case 7 -> (char) r.nextInt(0x7f, 0x100);
            case 8 -> (char) r.nextInt(0x100, 0x10000);
            default -> (char) r.nextInt(0xD800, 0xE000);
        };
    }

    static String anyString(SplittableRandom r, int length) {
        StringBuilder s = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            s.append(anyChar(r));
        }
        return s.toString();
    }

    static String printableAscii(SplittableRandom r, int length) {
        StringBuilder s = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            s.append((char) r.nextInt(0x20, 0x7f));
        }
        return s.toString();
    }

    static byte[] bytes(SplittableRandom r, int length) {
        byte[] b = new byte[length];
        r.nextBytes(b);
        return b;
    }

    @SafeVarargs
    static <T> T oneOf(SplittableRandom r, T... choices) {
        return choices[r.nextInt(choices.length)];
    }
}
