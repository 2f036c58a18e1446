package io.retrysafe.benchmarks;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.zaxxer.hikari.HikariDataSource;
import io.grpc.CallOptions;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.ServerCalls;
import io.retrysafe.RetrySafe;
import io.retrysafe.grpc.CallerResolver;
import io.retrysafe.grpc.GrpcIdempotency;
import io.retrysafe.grpc.RetrySafeClientInterceptor;
import io.retrysafe.grpc.RetrySafeServerInterceptor;
import io.retrysafe.http.HttpRoute;
import io.retrysafe.jaxrs.JaxrsIdempotency;
import io.retrysafe.jaxrs.JaxrsScopeResolver;
import io.retrysafe.jaxrs.RetrySafeFeature;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import io.retrysafe.jdbc.TransactionalRetrySafe;
import io.retrysafe.testservices.TestDatabases;
import io.retrysafe.testservices.TestSchemas;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.SeBootstrap;
import jakarta.ws.rs.core.Application;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.RuntimeDelegate;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;

/**
 * The servers {@link FrontDoorBenchmark} measures: one per mode, each serving the same payment (one insert, in a
 * transaction of its own or, in transactional mode, in the request's), over one PostgreSQL schema of their own.
 */
final class FrontDoors {
    /** How RetrySafe stands in front of the payment. */
    enum Mode { OFF, STANDALONE, TRANSACTIONAL }

    /** A front door's servers, and a client for each. */
    interface Door extends AutoCloseable {
        /** The modes this door runs. */
        List<Mode> modes();

        /** One payment with a fresh key (none with RetrySafe off); its status, as HTTP's. */
        int pay(Mode mode) throws Exception;
    }

    private static final String BODY = "{\"account\":\"acc-1\",\"amount\":1}";
    private static final String RECORDS = "frontdoor_record";
    private static final String SCHEMA = "rs_bench_frontdoor";

    private FrontDoors() {
    }

    static Door open(String door, int pool) throws Exception {
        HikariDataSource data = TestSchemas.postgres(SCHEMA);
        data.setMaximumPoolSize(pool);
        if (door.equals("quarkus")) {
            return new QuarkusDoor(data); // the example makes its own tables
        }
        try (Connection c = data.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE payment (id UUID PRIMARY KEY, account VARCHAR(64) NOT NULL, amount BIGINT NOT NULL, "
                    + "created_at TIMESTAMPTZ NOT NULL DEFAULT now())");
        }
        JdbcIdempotencyStore.builder(data).table(RECORDS).build().createSchema();
        return switch (door) {
            case "jersey" -> new JaxrsDoor("org.glassfish.jersey.server.internal.RuntimeDelegateImpl", data);
            case "resteasy" -> new JaxrsDoor("org.jboss.resteasy.core.providerfactory.ResteasyProviderFactoryImpl",
                    data);
            case "grpc" -> new GrpcDoor(data);
            default -> throw new IllegalArgumentException("door must be jersey, resteasy, grpc or quarkus, but was "
                    + door);
        };
    }

    private static RetrySafe engine(DataSource data) {
        return RetrySafe.builder(JdbcIdempotencyStore.builder(data).table(RECORDS).build()).build();
    }

    /** The payment: one insert on {@code c}. */
    static String pay(Connection c) throws SQLException {
        UUID id = UUID.randomUUID();
        try (PreparedStatement insert = c.prepareStatement("INSERT INTO payment (id, account, amount) VALUES (?, ?, ?)")) {
            insert.setObject(1, id);
            insert.setString(2, "acc-1");
            insert.setLong(3, 1);
            insert.executeUpdate();
        }
        return "{\"id\":\"" + id + "\",\"account\":\"acc-1\",\"amount\":1}";
    }

    /** The payment in a transaction of its own. */
    static String payAlone(DataSource data) throws SQLException {
        try (Connection c = data.getConnection()) {
            c.setAutoCommit(false);
            String answer = pay(c);
            c.commit();
            return answer;
        }
    }

    /** The Jakarta REST resource: in transactional mode on the request's connection. */
    @Path("/")
    public static final class PaymentsResource {
        private final DataSource data;
        private final boolean transactional;

        PaymentsResource(DataSource data, boolean transactional) {
            this.data = data;
            this.transactional = transactional;
        }

        @POST
        @Path("payments")
        @Consumes(MediaType.APPLICATION_JSON)
        public Response pay(String body) throws SQLException {
            String answer = transactional ? FrontDoors.pay(RetrySafeFeature.connection()) : payAlone(data);
            return Response.status(201).type(MediaType.APPLICATION_JSON_TYPE).entity(answer).build();
        }
    }

    /** Jersey or RESTEasy, chosen by its {@link RuntimeDelegate}: both are on the benchmarks' class path. */
    private static final class JaxrsDoor implements Door {
        private final HikariDataSource data;
        private final Map<Mode, SeBootstrap.Instance> servers = new EnumMap<>(Mode.class);
        private final Map<Mode, URI> uris = new EnumMap<>(Mode.class);
        private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

        JaxrsDoor(String runtimeDelegate, HikariDataSource data) throws Exception {
            this.data = data;
            RuntimeDelegate.setInstance((RuntimeDelegate) Class.forName(runtimeDelegate).getConstructor().newInstance());
            JaxrsIdempotency config = JaxrsIdempotency.custom().route(HttpRoute.of("POST", "/payments").build())
                    .scope(JaxrsScopeResolver.header("X-Caller")).build();
            start(Mode.OFF, Set.of(new PaymentsResource(data, false)));
            start(Mode.STANDALONE, Set.of(new PaymentsResource(data, false),
                    RetrySafeFeature.standalone(config, engine(data))));
            start(Mode.TRANSACTIONAL, Set.of(new PaymentsResource(data, true),
                    RetrySafeFeature.transactional(config, TransactionalRetrySafe.of(engine(data)))));
        }

        private void start(Mode mode, Set<Object> singletons) throws Exception {
            Application application = new Application() {
                @Override
                public Set<Object> getSingletons() {
                    return singletons;
                }
            };
            SeBootstrap.Configuration configuration = SeBootstrap.Configuration.builder().host("127.0.0.1").port(0)
                    .rootPath("/").build();
            SeBootstrap.Instance instance = SeBootstrap.start(application, configuration).toCompletableFuture()
                    .get(30, TimeUnit.SECONDS);
            servers.put(mode, instance);
            uris.put(mode, URI.create("http://127.0.0.1:" + instance.configuration().port() + "/payments"));
        }

        @Override
        public List<Mode> modes() {
            return List.of(Mode.OFF, Mode.STANDALONE, Mode.TRANSACTIONAL);
        }

        @Override
        public int pay(Mode mode) throws Exception {
            HttpRequest.Builder request = HttpRequest.newBuilder(uris.get(mode)).header("Content-Type",
                    "application/json").header("X-Caller", "bench").POST(HttpRequest.BodyPublishers.ofString(BODY));
            if (mode != Mode.OFF) {
                request.header("Idempotency-Key", UUID.randomUUID().toString());
            }
            return client.send(request.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        }

        @Override
        public void close() throws Exception {
            for (SeBootstrap.Instance instance : servers.values()) {
                instance.stop().toCompletableFuture().get(30, TimeUnit.SECONDS);
            }
            data.close();
        }
    }

    /**
     * The Quarkus example ({@code examples/payments-quarkus}, packaged: {@code -Dretrysafe.bench.quarkus-app} names
     * its {@code quarkus-run.jar}) as two processes, RetrySafe off and transactional, on the benchmark's schema. Its
     * payment is its own (a locked account row, an update, an insert), the same with RetrySafe off and on.
     */
    private static final class QuarkusDoor implements Door {
        private static final String APP = System.getProperty("retrysafe.bench.quarkus-app",
                "examples/payments-quarkus/target/quarkus-app/quarkus-run.jar");
        private static final String AUTHORIZATION = "Basic " + Base64.getEncoder().encodeToString(
                "alice:alice-secret".getBytes(StandardCharsets.UTF_8));
        private static final String PAYMENT = "{\"account\":\"acc-1\",\"amount\":1}";

        private final HikariDataSource data;
        private final Map<Mode, Process> processes = new EnumMap<>(Mode.class);
        private final Map<Mode, URI> uris = new EnumMap<>(Mode.class);
        private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

        QuarkusDoor(HikariDataSource data) throws Exception {
            this.data = data;
            if (!Files.isRegularFile(java.nio.file.Path.of(APP))) {
                throw new IllegalStateException("the Quarkus example is not packaged (" + APP + "): ./mvnw -q -pl "
                        + "examples/payments-quarkus -am package -DskipTests -DskipITs");
            }
            // Off, the example's resource writes in transactions of its own, as in standalone mode.
            start(Mode.OFF, "-Dretrysafe.enabled=false", "-Dretrysafe.mode=standalone");
            start(Mode.TRANSACTIONAL, "-Dretrysafe.enabled=true", "-Dretrysafe.mode=transactional");
            try (Connection c = data.getConnection(); Statement s = c.createStatement()) {
                s.execute("UPDATE account SET balance = 1000000000000 WHERE id = 'acc-1'");
            }
        }

        private void start(Mode mode, String enabled, String retrySafeMode) throws Exception {
            String url = TestDatabases.postgresJdbcUrl();
            url += (url.contains("?") ? "&" : "?") + "currentSchema=" + SCHEMA;
            Process process = new ProcessBuilder(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx512m", "-Dquarkus.http.port=0", "-Dquarkus.datasource.jdbc.url=" + url,
                    "-Dquarkus.datasource.username=" + TestDatabases.postgresUser(),
                    "-Dquarkus.datasource.password=" + TestDatabases.postgresPassword(),
                    enabled, retrySafeMode, "-jar", APP).redirectErrorStream(true).start();
            processes.put(mode, process);
            BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8));
            String line;
            while ((line = out.readLine()) != null && !line.startsWith("READY ")) {
                // the start-up log, until the line that names the port
            }
            if (line == null) {
                throw new IllegalStateException("the Quarkus example (" + mode + ") exited before it was ready");
            }
            uris.put(mode, URI.create("http://127.0.0.1:" + line.substring("READY ".length()).strip() + "/payments"));
            Thread drain = new Thread(() -> {
                try {
                    out.transferTo(Writer.nullWriter());
                } catch (IOException e) {
                    // the process ended
                }
            }, "quarkus-" + mode + "-output");
            drain.setDaemon(true);
            drain.start();
        }

        @Override
        public List<Mode> modes() {
            return List.of(Mode.OFF, Mode.TRANSACTIONAL);
        }

        @Override
        public int pay(Mode mode) throws Exception {
            HttpRequest.Builder request = HttpRequest.newBuilder(uris.get(mode)).header("Content-Type",
                    "application/json").header("Authorization", AUTHORIZATION)
                    .POST(HttpRequest.BodyPublishers.ofString(PAYMENT));
            if (mode != Mode.OFF) {
                request.header("Idempotency-Key", UUID.randomUUID().toString());
            }
            return client.send(request.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        }

        @Override
        public void close() throws Exception {
            for (Process process : processes.values()) {
                process.destroy();
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
            data.close();
        }
    }

    /** A hand-defined unary {@code Pay} (no generated code) on Netty; standalone mode only, as the interceptor runs. */
    private static final class GrpcDoor implements Door {
        private static final String SERVICE = "bench.Payments";
        private static final MethodDescriptor<Struct, Struct> PAY = MethodDescriptor.<Struct, Struct>newBuilder()
                .setType(MethodDescriptor.MethodType.UNARY)
                .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, "Pay"))
                .setRequestMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
                .setResponseMarshaller(ProtoUtils.marshaller(Struct.getDefaultInstance()))
                .build();
        private static final Metadata.Key<String> CALLER_HEADER = Metadata.Key.of("x-caller",
                Metadata.ASCII_STRING_MARSHALLER);
        private static final Context.Key<String> CALLER = Context.key("caller");
        private static final Struct REQUEST = Struct.newBuilder()
                .putFields("account", Value.newBuilder().setStringValue("acc-1").build())
                .putFields("amount", Value.newBuilder().setNumberValue(1).build()).build();

        private final HikariDataSource data;
        private final List<Server> servers = new ArrayList<>();
        private final Map<Mode, ManagedChannel> channels = new EnumMap<>(Mode.class);

        GrpcDoor(HikariDataSource data) throws Exception {
            this.data = data;
            ServerServiceDefinition payments = ServerServiceDefinition.builder(SERVICE)
                    .addMethod(PAY, ServerCalls.asyncUnaryCall((request, observer) -> {
                        try {
                            String answer = payAlone(data);
                            observer.onNext(Struct.newBuilder()
                                    .putFields("receipt", Value.newBuilder().setStringValue(answer).build()).build());
                            observer.onCompleted();
                        } catch (SQLException e) {
                            observer.onError(io.grpc.Status.UNAVAILABLE.withCause(e).asRuntimeException());
                        }
                    })).build();
            GrpcIdempotency config = GrpcIdempotency.custom().method(PAY.getFullMethodName())
                    .caller(CallerResolver.context(CALLER)).build();
            start(Mode.OFF, ServerInterceptors.intercept(payments, authentication()));
            start(Mode.STANDALONE, ServerInterceptors.intercept(payments,
                    new RetrySafeServerInterceptor(config, engine(data)), authentication()));
        }

        /** The application's authentication: the caller from a header, into the context RetrySafe reads. */
        private static ServerInterceptor authentication() {
            return new ServerInterceptor() {
                @Override
                public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                        ServerCallHandler<Q, R> next) {
                    return Contexts.interceptCall(Context.current().withValue(CALLER, headers.get(CALLER_HEADER)),
                            call, headers, next);
                }
            };
        }

        private void start(Mode mode, ServerServiceDefinition service) throws Exception {
            Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(service)
                    .build().start();
            servers.add(server);
            Metadata caller = new Metadata();
            caller.put(CALLER_HEADER, "bench");
            NettyChannelBuilder channel = NettyChannelBuilder.forAddress("127.0.0.1", server.getPort()).usePlaintext()
                    .intercept(MetadataUtils.newAttachHeadersInterceptor(caller));
            if (mode != Mode.OFF) {
                channel.intercept(RetrySafeClientInterceptor.allUnaryMethods());
            }
            channels.put(mode, channel.build());
        }

        @Override
        public List<Mode> modes() {
            return List.of(Mode.OFF, Mode.STANDALONE);
        }

        @Override
        public int pay(Mode mode) {
            // A failed call throws, and fails the benchmark as a status other than 201 would.
            ClientCalls.blockingUnaryCall(channels.get(mode), PAY, CallOptions.DEFAULT, REQUEST);
            return 201;
        }

        @Override
        public void close() throws Exception {
            for (ManagedChannel channel : channels.values()) {
                channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
            for (Server server : servers) {
                server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
            }
            data.close();
        }
    }
}
