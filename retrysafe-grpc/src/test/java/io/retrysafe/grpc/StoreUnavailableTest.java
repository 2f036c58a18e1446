package io.retrysafe.grpc;

import static io.retrysafe.grpc.PaymentsService.PAY;
import static io.retrysafe.grpc.PaymentsService.request;
import static io.retrysafe.grpc.PaymentsService.runs;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.rpc.RetryInfo;
import io.grpc.Status;
import io.grpc.protobuf.StatusProto;
import io.retrysafe.RetrySafe;
import io.retrysafe.grpc.TestServer.Reply;
import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcIdempotencyStore;
import java.net.ServerSocket;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.postgresql.ds.PGSimpleDataSource;

/** The JDBC store on a PostgreSQL address nothing listens on: no call runs unprotected. */
class StoreUnavailableTest {

    @ParameterizedTest
    @EnumSource(TestServer.Transport.class)
    void aStoreThatCannotBeReachedIsUnavailableWithARetryDelayAndNothingRuns(TestServer.Transport transport)
            throws Exception {
        PGSimpleDataSource down = new PGSimpleDataSource();
        down.setServerNames(new String[] {"127.0.0.1"});
        down.setPortNumbers(new int[] {closedPort()});
        down.setDatabaseName("test");
        down.setConnectTimeout(5);
        RetrySafe engine = RetrySafe.builder(JdbcIdempotencyStore.builder(down).dialect(JdbcDialect.POSTGRESQL)
                .table("rs_grpc_down").build()).name("grpc-down").build();
        String ref = "ref-" + UUID.randomUUID();

        try (TestServer server = TestServer.start(transport, engine)) {
            Reply<Struct> r = server.call(PAY, "alice", "key-" + ref, request(ref, 1, "ok"));

            assertThat(r.status().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(r.status().getDescription()).contains("idempotency store is unavailable");
            com.google.rpc.Status details = StatusProto.fromStatusAndTrailers(r.status(), r.trailers());
            assertThat(details.getDetails(0).unpack(RetryInfo.class).getRetryDelay().getSeconds()).isPositive();
            assertThat(runs(ref)).isZero();
        }
    }

    /** A loopback port that was free a moment ago: connections to it are refused. */
    private static int closedPort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
