package io.retrysafe.examples.paymentsquarkus;

import io.agroal.api.AgroalDataSource;
import io.retrysafe.jaxrs.RetrySafeFeature;
import io.retrysafe.quarkus.RetrySafeConfig;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.MediaType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Test only: {@code POST /failures} writes a payment, then throws; in transactional mode the write is in the
 * request's transaction and must roll back, in standalone mode it is never committed.
 */
@Path("/failures")
public class FailingResource {
    private static final Pattern ACCOUNT = Pattern.compile("\"account\"\\s*:\\s*\"([A-Za-z0-9-]{1,64})\"");

    @Inject
    AgroalDataSource dataSource;

    @Inject
    RetrySafeConfig retrySafe;

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    public String fail(String body) throws SQLException {
        Matcher account = ACCOUNT.matcher(body);
        account.find();
        boolean transactional = retrySafe.mode() == RetrySafeConfig.Mode.TRANSACTIONAL;
        Connection c = transactional ? RetrySafeFeature.connection() : dataSource.getConnection();
        try (PreparedStatement insert = c.prepareStatement(
                "INSERT INTO payment (id, payer, account, amount) VALUES (?, 'test', ?, 1)")) {
            if (!transactional) {
                c.setAutoCommit(false);
            }
            insert.setObject(1, UUID.randomUUID());
            insert.setString(2, account.group(1));
            insert.executeUpdate();
            throw new IllegalStateException("the payment failed after it was written");
        } finally {
            if (!transactional) {
                c.rollback();
                c.close();
            }
        }
    }
}
