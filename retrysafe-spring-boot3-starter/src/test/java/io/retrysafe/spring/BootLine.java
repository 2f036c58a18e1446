package io.retrysafe.spring;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.Map;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.jackson.JacksonAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.autoconfigure.kafka.KafkaAutoConfiguration;
import org.springframework.context.ApplicationContext;

/**
 * Spring Boot 3.5's classes that the shared tests name, where Boot 4 moved them into other packages: the
 * same tests run on both lines, each line has its own copy of this class and nothing else.
 */
public final class BootLine {
    public static final Class<?> DATA_SOURCE = DataSourceAutoConfiguration.class;
    public static final Class<?> DATA_SOURCE_TRANSACTION_MANAGER = DataSourceTransactionManagerAutoConfiguration.class;
    public static final Class<?> JACKSON = JacksonAutoConfiguration.class;
    public static final Class<?> KAFKA = KafkaAutoConfiguration.class;
    public static final Class<?> HEALTH_INDICATOR = HealthIndicator.class;

    private static final JsonMapper MAPPER = JsonMapper.builder().findAndAddModules()
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
            .disable(SerializationFeature.WRITE_DURATIONS_AS_TIMESTAMPS).build();

    private BootLine() {
    }

    /** What the named health indicator bean reports now. */
    public static HealthReading health(ApplicationContext context, String indicator) {
        Health health = context.getBean(indicator, HealthIndicator.class).health();
        return new HealthReading(health.getStatus().getCode(), health.getDetails());
    }

    /**
     * {@code value} as the actuator writes it (this line's Jackson, with Boot's defaults for dates and
     * durations), read back as a map.
     */
    public static Map<String, Object> json(Object value) {
        return MAPPER.convertValue(value, new TypeReference<>() { });
    }

    /** {@code value} as the actuator writes it. */
    public static String jsonText(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A health indicator's status code ({@code UP}, ...) and details. */
    public record HealthReading(String status, Map<String, Object> details) {
    }
}
