package io.retrysafe.nats;

import io.retrysafe.inbox.Delivery;
import io.retrysafe.inbox.InboxListener;
import io.retrysafe.inbox.InboxResult;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Hears every result of one inbox, with where the message sat in its stream. */
final class Recorder implements InboxListener {

    /** One delivery and what the inbox decided for it. */
    record Seen(long streamSequence, long delivered, InboxResult result) {
    }

    private final List<Seen> seen = new CopyOnWriteArrayList<>();

    @Override
    public void onResult(Delivery delivery, InboxResult result) {
        // The processor's position is <stream>#<sequence>.
        String position = delivery.position();
        seen.add(new Seen(Long.parseLong(position.substring(position.lastIndexOf('#') + 1)), delivery.deliveryCount(),
                result));
    }

    List<Seen> all() {
        return List.copyOf(seen);
    }

    /** Each result in a line a test can compare: {@code processed 1}, {@code retry-later handler-failed PT0.2S}, … */
    List<String> results() {
        return seen.stream().map(s -> describe(s.result())).toList();
    }

    List<String> resultsOf(long streamSequence) {
        return seen.stream().filter(s -> s.streamSequence() == streamSequence).map(s -> describe(s.result())).toList();
    }

    long count(Class<? extends InboxResult> kind) {
        return seen.stream().map(Seen::result).filter(kind::isInstance).count();
    }

    static String describe(InboxResult result) {
        if (result instanceof InboxResult.Processed p) {
            return "processed " + p.attempts();
        } else if (result instanceof InboxResult.Replayed) {
            return "replayed";
        } else if (result instanceof InboxResult.RetryLater r) {
            return "retry-later " + r.reason().tagValue() + " " + r.delay();
        }
        InboxResult.DeadLetter d = (InboxResult.DeadLetter) result;
        return "dead-letter " + d.reason().headerValue() + " " + d.attempts();
    }
}
