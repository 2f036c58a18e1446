package io.retrysafe.cli;

import io.retrysafe.IdempotencyKey;
import io.retrysafe.jdbc.JdbcAdmin;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.util.Optional;

/**
 * The release the {@code release} command and the console share: look at the record, let the
 * operator confirm what was shown, then free the key only if it is still the attempt shown. If its
 * lease ran out meanwhile and a retry took the key over, that newer attempt is healthy and is left alone.
 */
final class Release {
    /** What a release would act on. */
    sealed interface Target permits Absent, NotInProgress, Stuck {
    }

    /** No live record: never stored, expired or purged. */
    record Absent() implements Target {
    }

    /** A live record that is not {@code IN_PROGRESS}: nothing to free. */
    record NotInProgress(RecordStatus status) implements Target {
    }

    /** An {@code IN_PROGRESS} record: the attempt the operator confirms. */
    record Stuck(IdempotencyRecord record) implements Target {
    }

    private Release() {
    }

    static Target find(JdbcAdmin admin, String scope, String key) {
        Optional<IdempotencyRecord> found = admin.inspect(scope, key);
        if (found.isEmpty()) {
            return new Absent();
        }
        IdempotencyRecord r = found.get();
        return r.status() == RecordStatus.IN_PROGRESS ? new Stuck(r) : new NotInProgress(r.status());
    }

    /** Frees the key if it is still {@code attempt}, the one the operator confirmed; whether it changed. */
    static boolean confirmed(JdbcAdmin admin, String scope, String key, int attempt) {
        return admin.release(scope, key, attempt);
    }

    /** Whether {@code answer} is the key's digest, the confirmation both the command and the console ask for. */
    static boolean isConfirmation(IdempotencyKey key, String answer) {
        return answer != null && answer.strip().equals(key.digest());
    }

    static String absent(IdempotencyKey k, String table) {
        return "no live record for scope \"" + k.scope() + "\", key digest " + k.digest() + " in " + table
                + ": nothing to release";
    }

    static String notInProgress(IdempotencyKey k, RecordStatus status) {
        return "the record of key digest " + k.digest() + " is " + status
                + ": release frees IN_PROGRESS keys only; nothing changed";
    }

    static String changed(int attempt) {
        return "the record changed since it was shown (completed, released, or taken over by attempt "
                + (attempt + 1) + "); nothing changed";
    }

    static String released(IdempotencyKey k, int attempt) {
        return "released: key digest " + k.digest() + " is FAILED; the next retry with the same request runs as "
                + "attempt " + (attempt + 1);
    }
}
