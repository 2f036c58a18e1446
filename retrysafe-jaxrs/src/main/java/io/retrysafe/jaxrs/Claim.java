package io.retrysafe.jaxrs;

import io.retrysafe.Outcome;
import io.retrysafe.StoredResponse;
import io.retrysafe.http.HttpAnswer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** What claiming a request's key decided before its resource runs: run it, or answer without it. */
sealed interface Claim {

    /** The key is this request's: the resource runs, and its response completes the claim. */
    final class Running implements Claim {
        private final CompletableFuture<StoredResponse> response;
        private final CompletableFuture<Outcome<StoredResponse>> outcome;

        Running(CompletableFuture<StoredResponse> response, CompletableFuture<Outcome<StoredResponse>> outcome) {
            this.response = response;
            this.outcome = outcome;
        }

        /**
         * Records the resource's response: returns once it is durable (in transactional mode, committed with the
         * resource's writes), or throws the engine's failure (a {@link CompletionException}'s cause).
         */
        Outcome<StoredResponse> complete(StoredResponse stored) {
            response.complete(stored);
            return outcome.join();
        }

        /** The response cannot be recorded: the key is released (in transactional mode, everything rolled back). */
        void abandon(Throwable cause) {
            response.completeExceptionally(cause);
        }
    }

    /** A replay, or a refusal (in flight, key reused, store unavailable): the resource does not run. */
    record Answered(HttpAnswer answer) implements Claim {
    }
}
