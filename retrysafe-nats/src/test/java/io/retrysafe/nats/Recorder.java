package io.retrysafe.nats;

import io.nats.client.Message;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/** Hears every disposition of one processor, with where the message sat in its stream. */
final class Recorder implements ProcessorListener {

    /** One delivery and what the processor did with it. */
    record Seen(long streamSequence, long delivered, String subject, Disposition disposition) {
    }

    private final List<Seen> seen = new CopyOnWriteArrayList<>();

    @Override
    public void onDisposition(Message message, Disposition disposition) {
        seen.add(new Seen(message.metaData().streamSequence(), message.metaData().deliveredCount(),
                message.getSubject(), disposition));
    }

    List<Seen> all() {
        return List.copyOf(seen);
    }

    List<Disposition> dispositions() {
        return seen.stream().map(Seen::disposition).toList();
    }

    List<Disposition> dispositionsOf(long streamSequence) {
        return seen.stream().filter(s -> s.streamSequence() == streamSequence).map(Seen::disposition).toList();
    }

    long count(Predicate<Disposition> which) {
        return seen.stream().map(Seen::disposition).filter(which).count();
    }
}
