package io.retrysafe.spring;

import java.util.Map;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.context.ApplicationContext;

/**
 * Spring Boot 4's classes that the shared tests name, where Boot 3.5 has them in other packages: the
 * same tests run on both lines, each line has its own copy of this class and nothing else.
 */
public final class BootLine {
    public static final Class<?> DATA_SOURCE = DataSourceAutoConfiguration.class;
    public static final Class<?> DATA_SOURCE_TRANSACTION_MANAGER = DataSourceTransactionManagerAutoConfiguration.class;
    public static final Class<?> JACKSON = JacksonAutoConfiguration.class;
    public static final Class<?> KAFKA = KafkaAutoConfiguration.class;
    public static final Class<?> HEALTH_INDICATOR = HealthIndicator.class;

    private static final JsonMapper MAPPER = JsonMapper.builder().build();

    private BootLine() {
    }

    /** What the named health indicator bean reports now. */
    public static HealthReading health(ApplicationContext context, String indicator) {
        Health health = context.getBean(indicator, HealthIndicator.class).health();
        return new HealthReading(health.getStatus().getCode(), health.getDetails());
    }

    /** {@code value} as the actuator writes it (this line's Jackson), read back as a map. */
    public static Map<String, Object> json(Object value) {
        return MAPPER.convertValue(value, new TypeReference<>() { });
    }

    /** {@code value} as the actuator writes it. */
    public static String jsonText(Object value) {
        return MAPPER.writeValueAsString(value);
    }

    /** A health indicator's status code ({@code UP}, ...) and details. */
    public record HealthReading(String status, Map<String, Object> details) {
    }
}
