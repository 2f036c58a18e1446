package io.retrysafe.spring;

import java.lang.reflect.Type;
import java.util.function.Function;

/**
 * JSON for {@link Idempotent} methods: their arguments (the fingerprint) and their results (the stored
 * answer). Each Boot line's {@code MethodJsonConfiguration} backs it with that line's Jackson and the
 * application's mapper: Jackson 3 ({@code JsonMapper}) on Boot 4, Jackson 2 ({@code ObjectMapper}) on
 * Boot 3.5.
 */
interface MethodJson {

    byte[] write(Object value);

    /** A reader of {@code type}'s JSON, resolved once per method. */
    Function<byte[], Object> reader(Type type);
}
