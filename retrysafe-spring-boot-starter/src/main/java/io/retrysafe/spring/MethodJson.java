package io.retrysafe.spring;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
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

    /** A declared exception's own properties as JSON: never its stack trace, cause or suppressed ones. */
    byte[] writeException(Throwable exception);

    /** An exception that {@link #writeException} wrote, as an instance of {@code type}. */
    Throwable readException(byte[] json, Class<? extends Throwable> type);

    /** The mix-in that leaves a {@link Throwable}'s internals out of its JSON, on either Jackson line. */
    @JsonIgnoreProperties({"stackTrace", "cause", "suppressed", "localizedMessage"})
    abstract class ThrowableProperties {
    }
}
