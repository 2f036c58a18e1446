package io.retrysafe.examples.paymentsquarkus;

import io.agroal.api.AgroalDataSource;
import io.retrysafe.jaxrs.RetrySafeFeature;
import io.retrysafe.quarkus.RetrySafeConfig;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.FormParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Test only, protected routes beside the payments: {@code POST /failures} writes a payment, then throws (in
 * transactional mode the write is in the request's transaction and must roll back, in standalone mode it is never
 * committed); {@code POST /transfers} writes one from a form, so that a test sees the form's fields reach the
 * resource after the filter read the body.
 */
@Path("/")
public class TestResource {
    private static final Pattern ACCOUNT = Pattern.compile("\"account\"\\s*:\\s*\"([A-Za-z0-9-]{1,64})\"");

    @Inject
    AgroalDataSource dataSource;

    @Inject
    RetrySafeConfig retrySafe;

    @POST
    @Path("failures")
    @Consumes(MediaType.APPLICATION_JSON)
    public String fail(String body) throws SQLException {
        Matcher account = ACCOUNT.matcher(body);
        account.find();
        write(account.group(1), 1, true);
        throw new IllegalStateException("unreachable: the write failed");
    }

    @POST
    @Path("transfers")
    @Consumes(MediaType.APPLICATION_FORM_URLENCODED)
    public Response transfer(@FormParam("account") String account, @FormParam("amount") long amount)
            throws SQLException {
        write(account, amount, false);
        return Response.status(201).type(MediaType.APPLICATION_JSON_TYPE)
                .entity("{\"account\":\"" + account + "\",\"amount\":" + amount + "}").build();
    }

    /** Writes a payment on the request's connection (transactional mode) or in a transaction of its own. */
    private void write(String account, long amount, boolean thenFail) throws SQLException {
        boolean transactional = retrySafe.mode() == RetrySafeConfig.Mode.TRANSACTIONAL;
        Connection c = transactional ? RetrySafeFeature.connection() : dataSource.getConnection();
        try (PreparedStatement insert = c.prepareStatement(
                "INSERT INTO payment (id, payer, account, amount) VALUES (?, 'test', ?, ?)")) {
            if (!transactional) {
                c.setAutoCommit(false);
            }
            insert.setObject(1, UUID.randomUUID());
            insert.setString(2, account);
            insert.setLong(3, amount);
            insert.executeUpdate();
            if (thenFail) {
                throw new IllegalStateException("the payment failed after it was written");
            }
            if (!transactional) {
                c.commit();
            }
        } finally {
            if (!transactional) {
                c.rollback();
                c.close();
            }
        }
    }
}
