package io.retrysafe;

/** The work protected by a key. Runs at most once per claim; see {@link Attempt}. */
@FunctionalInterface
public interface Operation<T> {
    T run(Attempt attempt) throws Exception;
}
