package io.retrysafe.spring;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.micrometer.tracing.internal.SpanNameUtil;
import java.util.Map;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.jackson.JacksonAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.autoconfigure.jdbc.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.autoconfigure.kafka.KafkaAutoConfiguration;
import org.springframework.boot.autoconfigure.r2dbc.R2dbcAutoConfiguration;
import org.springframework.boot.autoconfigure.r2dbc.R2dbcTransactionManagerAutoConfiguration;
import org.springframework.boot.autoconfigure.web.reactive.HttpHandlerAutoConfiguration;
import org.springframework.boot.autoconfigure.web.reactive.WebFluxAutoConfiguration;
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
    public static final Class<?> R2DBC = R2dbcAutoConfiguration.class;
    public static final Class<?> R2DBC_TRANSACTION_MANAGER = R2dbcTransactionManagerAutoConfiguration.class;
    public static final Class<?> WEBFLUX = WebFluxAutoConfiguration.class;
    /** The application's {@code HttpHandler}: its WebFlux dispatcher behind every {@code WebFilter} bean, in order. */
    public static final Class<?> HTTP_HANDLER = HttpHandlerAutoConfiguration.class;
    public static final Class<?> HEALTH_INDICATOR = HealthIndicator.class;
    /**
     * Boot's own tracing, in the actuator on this line, so on these tests' class path: its tracer, and the
     * tracing handler it adds to every {@code ObservationRegistry} bean. That handler shares each
     * observation's span slot with a test's own tracing handler and ends its span in place of the test's, so
     * the test's spans never end. For {@code spring.autoconfigure.exclude}.
     */
    public static final String TRACING =
            "org.springframework.boot.actuate.autoconfigure.tracing.MicrometerTracingAutoConfiguration,"
            + "org.springframework.boot.actuate.autoconfigure.tracing.OpenTelemetryTracingAutoConfiguration";

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

    /**
     * The span's name a tracing handler gives an observation of {@code contextualName}: Micrometer Tracing 1.5,
     * this line's, writes it in lower hyphen case and cuts it to 50 characters ({@code http POST} becomes
     * {@code http -p-o-s-t}).
     */
    public static String spanName(String contextualName) {
        return SpanNameUtil.toLowerHyphen(contextualName);
    }

    /** A health indicator's status code ({@code UP}, ...) and details. */
    public record HealthReading(String status, Map<String, Object> details) {
    }
}
