package io.retrysafe.redis;

import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.api.sync.RedisKeyCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** Test keys under a prefix of the test's own, so that tests share a Redis without flushing it. */
final class RedisTestKeys {
    private RedisTestKeys() {
    }

    /** A fresh key prefix: {@code retrysafe-it:<uuid>:}. */
    static String uniquePrefix() {
        return "retrysafe-it:" + UUID.randomUUID() + ":";
    }

    /** Every key under {@code prefix} on the server behind {@code commands} (one node of a cluster). */
    static List<String> keys(RedisKeyCommands<String, String> commands, String prefix) {
        List<String> keys = new ArrayList<>();
        ScanIterator.scan(commands, ScanArgs.Builder.matches(prefix + "*").limit(1000)).forEachRemaining(keys::add);
        return keys;
    }

    /** Deletes every key under {@code prefix}, and nothing else. */
    static int deleteAll(RedisKeyCommands<String, String> commands, String prefix) {
        List<String> keys = keys(commands, prefix);
        for (String key : keys) {
            commands.unlink(key);
        }
        return keys.size();
    }
}
