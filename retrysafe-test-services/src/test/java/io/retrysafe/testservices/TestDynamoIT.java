package io.retrysafe.testservices;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

class TestDynamoIT {

    @Test
    void theServerAnswersListTables() {
        // Skipped with a reason when there is no server and no dynalite to start, failed instead when CI=true.
        String url = TestDynamo.url();

        assertThat(TestDynamo.probe(url)).as("probe of %s", url).isNull();
    }

    @Test
    void deletingATableNobodyCreatedFailsWithTheServersAnswer() {
        String url = TestDynamo.url();
        String table = TestDynamo.uniqueTableName("rs-it");

        assertThatThrownBy(() -> TestDynamo.deleteTable(url, table)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("DeleteTable " + table).hasMessageContaining("answered 400");
    }

    @Test
    void aPortNobodyListensOnIsNotAServer() throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            port = socket.getLocalPort();
        }

        assertThat(TestDynamo.probe("http://127.0.0.1:" + port)).startsWith("ConnectException");
        assertThat(TestDynamo.probe("not a url")).startsWith("invalid URL: ");
    }

    @Test
    void uniqueTableNamesAreValidAndDiffer() {
        String a = TestDynamo.uniqueTableName("rs-it");
        String b = TestDynamo.uniqueTableName("rs-it");
        assertThat(a).matches("rs-it-[0-9a-f]{12}").isNotEqualTo(b);
        assertThatThrownBy(() -> TestDynamo.uniqueTableName("has/slash")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was has/slash");
    }
}
