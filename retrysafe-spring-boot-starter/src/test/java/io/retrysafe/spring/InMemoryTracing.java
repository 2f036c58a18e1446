package io.retrysafe.spring;

import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelBaggageManager;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Micrometer Observation bridged to an OpenTelemetry SDK that keeps every finished span in memory, as an
 * application's tracing would be set up, minus the export. A test that makes {@link #registry()} its
 * {@code ObservationRegistry} bean sets {@link #WITHOUT_BOOTS_TRACING}: Boot's tracing, where the class path has
 * it, would add its own tracing handler to that registry.
 */
public final class InMemoryTracing {
    public static final AttributeKey<String> KIND = AttributeKey.stringKey(RetrySafeObservations.KIND);
    public static final AttributeKey<String> OUTCOME = AttributeKey.stringKey(RetrySafeObservations.OUTCOME);
    public static final AttributeKey<String> DIGEST = AttributeKey.stringKey(RetrySafeObservations.KEY_DIGEST);
    /** A property for {@code @SpringBootTest}: Boot's own tracing auto-configuration stays out. */
    public static final String WITHOUT_BOOTS_TRACING = "spring.autoconfigure.exclude=" + BootLine.TRACING;

    private final InMemorySpanExporter spans = InMemorySpanExporter.create();
    private final ObservationRegistry registry = ObservationRegistry.create();

    public InMemoryTracing() {
        SdkTracerProvider provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans))
                .build();
        OtelCurrentTraceContext context = new OtelCurrentTraceContext();
        OtelTracer tracer = new OtelTracer(provider.get("test"), context, event -> { },
                new OtelBaggageManager(context, List.of(), List.of()));
        registry.observationConfig().observationHandler(new DefaultTracingObservationHandler(tracer));
    }

    public ObservationRegistry registry() {
        return registry;
    }

    public void reset() {
        spans.reset();
    }

    public List<SpanData> all() {
        return spans.getFinishedSpanItems();
    }

    /** RetrySafe's spans, in the order they started. */
    public List<SpanData> retrySafe() {
        List<SpanData> ours = new ArrayList<>(spans.getFinishedSpanItems());
        ours.removeIf(s -> s.getAttributes().get(KIND) == null);
        ours.sort(Comparator.comparingLong(SpanData::getStartEpochNanos));
        return ours;
    }
}
