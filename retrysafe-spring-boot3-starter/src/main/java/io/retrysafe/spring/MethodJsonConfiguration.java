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
                try {
                    return json.writeValueAsBytes(value);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            @Override
            public Function<byte[], Object> reader(Type type) {
                JavaType javaType = json.getTypeFactory().constructType(type);
                return body -> {
                    try {
                        return json.readValue(body, javaType);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                };
            }

            @Override
            public byte[] writeException(Throwable exception) {
                try {
                    return exceptions.writeValueAsBytes(exception);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            @Override
            public Throwable readException(byte[] body, Class<? extends Throwable> type) {
                try {
                    return exceptions.readValue(body, type);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        };
    }
}
