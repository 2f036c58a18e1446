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
import org.springframework.boot.r2dbc.autoconfigure.R2dbcAutoConfiguration;
import org.springframework.boot.r2dbc.autoconfigure.R2dbcTransactionManagerAutoConfiguration;
import org.springframework.boot.webflux.autoconfigure.HttpHandlerAutoConfiguration;
import org.springframework.boot.webflux.autoconfigure.WebFluxAutoConfiguration;
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
    public static final Class<?> R2DBC = R2dbcAutoConfiguration.class;
    public static final Class<?> R2DBC_TRANSACTION_MANAGER = R2dbcTransactionManagerAutoConfiguration.class;
    public static final Class<?> WEBFLUX = WebFluxAutoConfiguration.class;
    /** The application's {@code HttpHandler}: its WebFlux dispatcher behind every {@code WebFilter} bean, in order. */
    public static final Class<?> HTTP_HANDLER = HttpHandlerAutoConfiguration.class;
    public static final Class<?> HEALTH_INDICATOR = HealthIndicator.class;
    /**
     * Boot's own tracing, in spring-boot-micrometer-tracing* on this line (not on these tests' class path; an
     * absent name is ignored): its tracer, and the tracing handler it adds to every {@code ObservationRegistry}
     * bean. That handler shares each observation's span slot with a test's own tracing handler and ends its span
     * in place of the test's, so the test's spans never end. For {@code spring.autoconfigure.exclude}.
     */
    public static final String TRACING =
            "org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration,"
            + "org.springframework.boot.micrometer.tracing.opentelemetry.autoconfigure.OpenTelemetryTracingAutoConfiguration";

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

    /**
     * The span's name a tracing handler gives an observation of {@code contextualName}: Micrometer Tracing 1.6,
     * this line's, keeps it as it is.
     */
    public static String spanName(String contextualName) {
        return contextualName;
    }

    /** A health indicator's status code ({@code UP}, ...) and details. */
    public record HealthReading(String status, Map<String, Object> details) {
    }
}
