package io.retrysafe.gateway;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.retrysafe.AsyncRetrySafe;
import io.retrysafe.OperationPolicy;
import io.retrysafe.RetrySafe;
import io.retrysafe.gateway.GatewayConfig.BasicScope;
import io.retrysafe.gateway.GatewayConfig.HeaderScope;
import io.retrysafe.gateway.GatewayConfig.Route;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.micrometer.MicrometerRetrySafeListener;
import io.retrysafe.servlet.HttpIdempotency;
import io.retrysafe.servlet.IdempotentExecutor;
import io.retrysafe.servlet.IdempotentRoute;
import io.retrysafe.servlet.RetrySafeFilter;
import io.retrysafe.servlet.ScopeResolver;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandlerCollection;
import org.eclipse.jetty.server.handler.GracefulHandler;
import org.eclipse.jetty.util.component.Graceful;
import org.eclipse.jetty.util.thread.Invocable.InvocationType;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/**
 * The running gateway: Jetty with, in front of the forwarding servlet, each route's {@link RetrySafeFilter} on the
 * configured store. {@link #close()} stops taking requests, lets those in flight finish (up to the drain timeout,
 * so their records are completed or released), gives up those still waiting for the upstream's answer past it (their
 * outcome is unknown: answered so, their keys kept in progress until their leases end), then closes the store.
 */
public final class Gateway implements AutoCloseable {
    /** The engine's name: the {@code name} tag of every metric. */
    public static final String ENGINE_NAME = "gateway";
    private static final System.Logger LOG = System.getLogger(Gateway.class.getName());
    /** Past the drain timeout, how long the requests given up on may take to write their answers. */
    private static final Duration GIVEN_UP_ANSWER_BOUND = Duration.ofSeconds(5);

    private final Server server;
    private final HttpClient client;
    private final Stores.Opened store;
    private final ServerConnector connector;
    private final ServerConnector adminConnector;
    private final Duration drainTimeout;

    private Gateway(Server server, ServerConnector connector, ServerConnector adminConnector, HttpClient client,
            Stores.Opened store, Duration drainTimeout) {
        this.server = server;
        this.connector = connector;
        this.adminConnector = adminConnector;
        this.client = client;
        this.store = store;
        this.drainTimeout = drainTimeout;
    }

    /** Opens the store, starts the client and the server; on any failure, closes what it had opened. */
    public static Gateway start(GatewayConfig config, Map<String, String> env) throws Exception {
        // One resolver per source: a users file or a key set is read once, however many routes name it.
        Map<GatewayConfig.Scope, Callers> scopes = new HashMap<>();
        BasicAuthScope.Checks passwordChecks = new BasicAuthScope.Checks();
        for (Route r : config.routes()) {
            if (!scopes.containsKey(r.scope())) {
                scopes.put(r.scope(), callers(r.scope(), env, passwordChecks));
            }
        }
        Optional<Callers> defaultCallers = config.scope()
                .map(s -> scopes.computeIfAbsent(s, x -> callers(x, env, passwordChecks)));
        // The filter's caller is the one the edge checked, whatever the route's source.
        ScopeResolver checked = request -> (String) request.getAttribute(Routes.SCOPE);
        Stores.Opened store = Stores.open(config.store(), env);
        HttpClient client = new HttpClient();
        Server server = null;
        try {
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            MicrometerRetrySafeListener metrics = MicrometerRetrySafeListener.builder(registry, ENGINE_NAME).build();
            if (scopes.keySet().stream().anyMatch(BasicScope.class::isInstance)) {
                passwordChecks(passwordChecks, registry);
            }
            RetrySafe engine = RetrySafe.builder(store.store()).name(ENGINE_NAME).listener(metrics)
                    .policy(policy(config.idempotency().lease(), config.idempotency().retention(),
                            config.idempotency()))
                    .build();

            client.setConnectTimeout(config.upstream().connectTimeout().toMillis());
            // The upstream's answers are read by the client's selector threads themselves, not handed to another
            // thread each: no listener of the gateway's blocks (a blocking write goes to a request thread).
            client.getHttpClientTransport().setInvocationType(InvocationType.NON_BLOCKING);
            client.setFollowRedirects(false);
            client.setUserAgentField(null);
            client.start();
            // Bodies pass through as the upstream encoded them (a gzip answer stays gzip, labelled so): the client
            // decodes nothing and asks for no encoding of its own. Cleared once started, as starting adds the
            // decoders it finds.
            client.getContentDecoderFactories().clear();

            QueuedThreadPool threads = new GatewayThreads();
            // Protected requests take the non-blocking path on every store: on one whose calls block, each call runs
            // on a thread of the pool, which the request holds only while the call runs.
            AsyncRetrySafe nonBlocking = engine.withAsyncStore(store.async(threads));
            List<Routes.Protected> protectedRoutes = new ArrayList<>();
            for (Route r : config.routes()) {
                IdempotentRoute.Builder route = IdempotentRoute.of(r.method(), r.path()).keyRequired(r.keyRequired())
                        .policy(policy(r.lease(), r.retention(), config.idempotency()));
                if (!r.jsonMembers().isEmpty()) {
                    route.jsonMembers(r.jsonMembers().toArray(String[]::new));
                }
                if (!r.fingerprintHeaders().isEmpty()) {
                    route.fingerprintHeaders(r.fingerprintHeaders().toArray(String[]::new));
                }
                IdempotentRoute built = route.build();
                HttpIdempotency http = HttpIdempotency.custom().route(built).scope(checked)
                        .maxRequestBytes(config.idempotency().maxRequestBytes())
                        .maxResponseBytes(config.idempotency().maxResponseBytes())
                        .replayedHeaders(r.storedHeaders())
                        // The upstream gets a form's bytes as the client sent them.
                        .rawFormBodies(true)
                        .build();
                protectedRoutes.add(new Routes.Protected(built,
                        new RetrySafeFilter(http, IdempotentExecutor.standalone(engine), engine.listener()),
                        new Routes.Target(r.upstream(), r.responseTimeout(), r.lease()), scopes.get(r.scope()),
                        new NonBlockingRoute(built, http, nonBlocking.with(built.policy().orElseThrow()))));
            }
            List<HttpRoute> publicRoutes = config.paths().publicRoutes().stream()
                    .map(p -> HttpRoute.of(p.method(), p.path()).build()).toList();
            Routes routes = new Routes(protectedRoutes, config.upstream().url().map(u -> new Routes.Target(u,
                    config.upstream().responseTimeout(), config.idempotency().lease())), defaultCallers, publicRoutes,
                    !config.paths().caseSensitive(), config.listen().minRequestDataRate());

            server = new Server(threads);
            HttpConfiguration httpConfig = new HttpConfiguration();
            httpConfig.setSendServerVersion(false);
            ServerConnector connector = new ServerConnector(server, new HttpConnectionFactory(httpConfig));
            connector.setName("proxy");
            connector.setHost(config.listen().host());
            connector.setPort(config.listen().port());
            connector.setIdleTimeout(config.listen().idleTimeout().toMillis());
            server.addConnector(connector);
            ServerConnector adminConnector = new ServerConnector(server, new HttpConnectionFactory(httpConfig));
            adminConnector.setName("admin");
            adminConnector.setHost(config.admin().host());
            adminConnector.setPort(config.admin().port());
            server.addConnector(adminConnector);
            server.setErrorHandler(new EdgeProblems.ErrorPages());

            // Every path of the proxied port is the upstream's: the gateway's own endpoints are on the admin port.
            ServletContextHandler context = new ServletContextHandler("/");
            context.setVirtualHosts(List.of("@proxy"));
            // Asynchronous: a request no route protects awaits its answer without a thread (AsyncAnswer).
            AccessLog log = new AccessLog();
            FilterHolder accessLog = new FilterHolder(log);
            FilterHolder edge = new FilterHolder(routes);
            Deadlines deadlines = new Deadlines(client.getScheduler());
            ServletHolder forwarder = new ServletHolder(new Forwarder(client, deadlines, config.upstream().retryAfter(),
                    config.upstream().callerHeader(), config.upstream().chunkedRequests()));
            accessLog.setAsyncSupported(true);
            edge.setAsyncSupported(true);
            forwarder.setAsyncSupported(true);
            context.addFilter(accessLog, "/*", EnumSet.of(DispatcherType.REQUEST));
            context.addFilter(edge, "/*", EnumSet.of(DispatcherType.REQUEST));
            context.addServlet(forwarder, "/*");
            ServletContextHandler admin = new ServletContextHandler("/");
            admin.setVirtualHosts(List.of("@admin"));
            admin.addServlet(new ServletHolder(new Health(store)), "/health");
            admin.addServlet(new ServletHolder(new Metrics(registry)), "/metrics");
            // Requests no route protects are forwarded before the servlets, without a request thread.
            server.setHandler(new GracefulHandler(new NonBlockingForwarder(new ContextHandlerCollection(context, admin),
                    routes, client, deadlines, log, config.upstream().retryAfter(), config.upstream().callerHeader())));
            server.setStopTimeout(config.listen().drainTimeout().toMillis());
            server.start();
            return new Gateway(server, connector, adminConnector, client, store, config.listen().drainTimeout());
        } catch (Exception | Error e) {
            if (server != null) {
                stopQuietly(server);
            }
            stopQuietly(client);
            store.resources().close();
            throw e;
        }
    }

    private static OperationPolicy policy(Duration lease, Duration retention,
            GatewayConfig.Idempotency defaults) {
        return OperationPolicy.custom().retention(retention).leaseTtl(lease).waitForResult(defaults.waitForResult())
                .build();
    }

    /**
     * The bcrypt checks the Basic scopes made, by outcome: a flood of guessed passwords shows as checks refused. The
     * registry holds the count weakly; the scopes hold it for as long as the gateway runs.
     */
    private static void passwordChecks(BasicAuthScope.Checks checks, MeterRegistry registry) {
        for (boolean matched : new boolean[] {true, false}) {
            FunctionCounter.builder("retrysafe.gateway.password.checks", checks, c -> c.made(matched))
                    .tag("outcome", matched ? "matched" : "refused")
                    .description("bcrypt checks of presented passwords; credentials checked before are not checked again")
                    .register(registry);
        }
    }

    private static Callers callers(GatewayConfig.Scope scope, Map<String, String> env,
            BasicAuthScope.Checks passwordChecks) {
        if (scope instanceof BasicScope basic) {
            return BasicAuthScope.fromFile(basic.usersFile(), passwordChecks);
        } else if (scope instanceof GatewayConfig.JwtScope jwt) {
            return JwtScope.of(jwt, env);
        }
        return Callers.trustedHeader(((HeaderScope) scope).name());
    }

    /** The port the gateway listens on (the one chosen, when configured 0). */
    public int port() {
        return connector.getLocalPort();
    }

    /** The port of the gateway's own endpoints, {@code /health} and {@code /metrics}. */
    public int adminPort() {
        return adminConnector.getLocalPort();
    }

    @Override
    public void close() {
        // Graceful: no new requests; those in flight finish (up to the drain timeout) and settle their records.
        drain();
        stopQuietly(server);
        stopQuietly(client);
        try {
            store.resources().close();
        } catch (Exception e) {
            LOG.log(Level.WARNING, () -> "closing the store failed: " + e);
        }
    }

    /**
     * Stops taking connections and waits, up to the drain timeout, for the requests in flight. Past it, the exchanges
     * with the upstream still waiting for its answer are given up by stopping the client, while the clients'
     * connections are still open: each of those requests was sent, so its outcome is unknown, and it answers
     * {@code 503 /problems/outcome-unknown} with its key kept in progress until its lease ends (one not sent yet, still
     * connecting, answers {@code 503 /problems/upstream-unavailable} and its key is released). The server's stop then
     * waits for those answers, up to {@link #GIVEN_UP_ANSWER_BOUND}, before it closes the connections. Stopping the
     * server alone would close them first: the client would get no answer, and the request threads would be
     * interrupted later.
     */
    private void drain() {
        CompletableFuture<Void> drained = Graceful.shutdown(server);
        try {
            drained.get(drainTimeout.toMillis(), TimeUnit.MILLISECONDS);
            return;
        } catch (TimeoutException e) {
            LOG.log(Level.WARNING, () -> "requests still in flight after the drain timeout of " + drainTimeout
                    + ": those waiting for the upstream's answer are given up; their keys stay in progress until "
                    + "their leases end");
        } catch (ExecutionException e) {
            LOG.log(Level.WARNING, () -> "draining the requests in flight failed: " + e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        stopQuietly(client);
        server.setStopTimeout(GIVEN_UP_ANSWER_BOUND.toMillis());
    }

    private static void stopQuietly(org.eclipse.jetty.util.component.LifeCycle lifeCycle) {
        try {
            lifeCycle.stop();
        } catch (Exception e) {
            LOG.log(Level.WARNING, () -> "stopping " + lifeCycle + " failed: " + e);
        }
    }

    /** {@code 200} when the store answers, {@code 503} when it does not. */
    static final class Health extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient Stores.Opened store;

        Health(Stores.Opened store) {
            this.store = store;
        }

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            boolean up = store.isReachable();
            response.setStatus(up ? 200 : 503);
            response.setContentType("application/json");
            response.getOutputStream().write(("{\"status\":\"" + (up ? "UP" : "DOWN") + "\",\"store\":\""
                    + store.store().name() + "\"}").getBytes(StandardCharsets.UTF_8));
        }
    }

    /** The meters of {@code retrysafe-micrometer}, in the Prometheus text format. */
    static final class Metrics extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient PrometheusMeterRegistry registry;

        Metrics(PrometheusMeterRegistry registry) {
            this.registry = registry;
        }

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
            response.setContentType("text/plain; version=0.0.4; charset=utf-8");
            response.getOutputStream().write(registry.scrape().getBytes(StandardCharsets.UTF_8));
        }
    }

}
