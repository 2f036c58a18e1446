package io.retrysafe.benchmarks;

import io.retrysafe.http.HttpPaths;
import io.retrysafe.http.HttpRoute;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What every HTTP front door does first on every request, protected or not: the path normalised, then each route
 * asked whether it protects the request, until one does. Run with JMH's GC profiler: its
 * {@code gc.alloc.rate.norm} is the bytes this step allocates per request.
 *
 * <pre>
 * java -jar retrysafe-benchmarks/target/benchmarks.jar RequestRouteBenchmark -f 3 -wi 3 -w 1s -i 3 -r 1s -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(3)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@State(Scope.Benchmark)
public class RequestRouteBenchmark {

    /** The request line: a protected route's, one with a path variable, and one no route protects. */
    @Param({"POST /payments", "POST /orders/o-1/refunds", "GET /actuator/health"})
    public String request;

    private final List<HttpRoute> routes = List.of(HttpRoute.of("PUT", "/accounts/{id}").build(),
            HttpRoute.of("POST", "/orders/{id}/refunds").build(), HttpRoute.of("POST", "/payments").build());
    private String method;
    private String path;

    @Setup
    public void setUp() {
        int space = request.indexOf(' ');
        method = request.substring(0, space);
        path = request.substring(space + 1);
    }

    @Benchmark
    public HttpRoute route() {
        String normal = HttpPaths.normalise(path);
        for (HttpRoute route : routes) {
            if (route.matches(method, normal)) {
                return route;
            }
        }
        return null;
    }
}
