package io.retrysafe.spring;

import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Type;
import java.util.function.Function;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@link MethodJson} on Boot 3.5: Jackson 2, through the application's {@code ObjectMapper} (so
 * {@code spring.jackson.*} applies) when it has one, else a mapper with the modules found on the class
 * path (java.time among them).
 */
@Configuration(proxyBeanMethods = false)
class MethodJsonConfiguration {
    static final String JACKSON = "com.fasterxml.jackson.databind.ObjectMapper";
    static final String JACKSON_AUTO_CONFIGURATION = "org.springframework.boot.autoconfigure.jackson.JacksonAutoConfiguration";

    @Bean
    @ConditionalOnMissingBean
    MethodJson retrySafeMethodJson(ObjectProvider<ObjectMapper> mapper) {
        ObjectMapper json = mapper.getIfAvailable(() -> JsonMapper.builder().findAndAddModules().build());
        ObjectMapper exceptions = json.copy().addMixIn(Throwable.class, MethodJson.ThrowableProperties.class);
        return new MethodJson() {
            @Override
            public byte[] write(Object value) {
                return unchecked(() -> json.writeValueAsBytes(value));
            }

            @Override
            public Function<byte[], Object> reader(Type type) {
                JavaType javaType = json.getTypeFactory().constructType(type);
                return body -> unchecked(() -> json.readValue(body, javaType));
            }

            @Override
            public byte[] writeException(Throwable exception) {
                return unchecked(() -> exceptions.writeValueAsBytes(exception));
            }

            @Override
            public Throwable readException(byte[] body, Class<? extends Throwable> type) {
                return unchecked(() -> exceptions.readValue(body, type));
            }
        };
    }

    /** Jackson 2 declares IOException; MethodJson's callers, like Jackson 3's, get it unchecked. */
    private static <T> T unchecked(JsonCall<T> call) {
        try {
            return call.run();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FunctionalInterface
    private interface JsonCall<T> {
        T run() throws IOException;
    }
}
