package io.retrysafe.spring;

import java.lang.reflect.Type;
import java.util.function.Function;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.json.JsonMapper;

/** {@link MethodJson} on Boot 4: Jackson 3, through the application's {@code JsonMapper} when it has one. */
@Configuration(proxyBeanMethods = false)
class MethodJsonConfiguration {
    static final String JACKSON = "tools.jackson.databind.json.JsonMapper";
    static final String JACKSON_AUTO_CONFIGURATION = "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration";

    @Bean
    @ConditionalOnMissingBean
    MethodJson retrySafeMethodJson(ObjectProvider<JsonMapper> mapper) {
        JsonMapper json = mapper.getIfAvailable(JsonMapper::new);
        JsonMapper exceptions = json.rebuild().addMixIn(Throwable.class, MethodJson.ThrowableProperties.class).build();
        return new MethodJson() {
            @Override
            public byte[] write(Object value) {
                return json.writeValueAsBytes(value);
            }

            @Override
            public Function<byte[], Object> reader(Type type) {
                JavaType javaType = json.getTypeFactory().constructType(type);
                return body -> json.readValue(body, javaType);
            }

            @Override
            public byte[] writeException(Throwable exception) {
                return exceptions.writeValueAsBytes(exception);
            }

            @Override
            public Throwable readException(byte[] body, Class<? extends Throwable> type) {
                return exceptions.readValue(body, type);
            }
        };
    }
}
