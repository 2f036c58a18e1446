package io.retrysafe.jaxrs;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.FormParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The payments API the conformance suite expects, as a plain Jakarta REST resource: in transactional mode its
 * writes go to the connection of the request's transaction, in standalone mode to a transaction of its own.
 * An amount of {@value #FAILING_AMOUNT} fails after the payment was written, so that a test sees it rolled back.
 */
@Path("/")
public class PaymentsResource {
    static final long FAILING_AMOUNT = 13;
    private static final Pattern ACCOUNT = Pattern.compile("\"account\"\\s*:\\s*\"([A-Za-z0-9-]{1,64})\"");
    private static final Pattern AMOUNT = Pattern.compile("\"amount\"\\s*:\\s*(\\d{1,12})");

    private final DataSource dataSource;
    private final boolean transactional;

    PaymentsResource(DataSource dataSource, boolean transactional) {
        this.dataSource = dataSource;
        this.transactional = transactional;
    }

    @POST
    @Path("payments")
    @Consumes(MediaType.APPLICATION_JSON)
    public Response pay(String body) throws SQLException {
        Matcher account = ACCOUNT.matcher(body);
        Matcher amount = AMOUNT.matcher(body);
        if (!account.find() || !amount.find()) {
            return Response.status(400).build();
        }
        return pay(account.group(1), Long.parseLong(amount.group(1)));
    }

    /** The same payment from a form, so that a test sees the form's fields reach the resource after the filter. */
    @POST
    @Path("transfers")
    @Consumes(MediaType.APPLICATION_FORM_URLENCODED)
    public Response transfer(@FormParam("account") String account, @FormParam("amount") long amount)
            throws SQLException {
        return pay(account, amount);
    }

    /** A {@code 200} of {@code size} bytes, for the bound on responses. */
    @POST
    @Path("reports")
    @Consumes(MediaType.APPLICATION_JSON)
    public Response report(@QueryParam("size") int size) {
        return Response.ok("r".repeat(size), MediaType.TEXT_PLAIN_TYPE).build();
    }

    private Response pay(String account, long amount) throws SQLException {
        if (transactional) {
            return pay(RetrySafeFeature.connection(), account, amount);
        }
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            Response answer = pay(c, account, amount);
            c.commit();
            return answer;
        }
    }

    private static Response pay(Connection c, String account, long amount) throws SQLException {
        long balance;
        try (PreparedStatement select = c.prepareStatement("SELECT balance FROM account WHERE id = ? FOR UPDATE")) {
            select.setString(1, account);
            try (ResultSet rs = select.executeQuery()) {
                if (!rs.next()) {
                    return Response.status(404).build();
                }
                balance = rs.getLong(1);
            }
        }
        if (balance < amount) {
            return Response.status(402).type("application/problem+json").entity("{\"type\":\"/problems/"
                    + "insufficient-funds\",\"title\":\"Insufficient funds\",\"status\":402,\"balance\":" + balance
                    + "}").build();
        }
        UUID id = UUID.randomUUID();
        Instant createdAt = Instant.now();
        try (PreparedStatement update = c.prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?");
                PreparedStatement insert = c.prepareStatement("INSERT INTO payment (id, account, amount) VALUES (?, ?, ?)")) {
            update.setLong(1, amount);
            update.setString(2, account);
            update.executeUpdate();
            insert.setObject(1, id);
            insert.setString(2, account);
            insert.setLong(3, amount);
            insert.executeUpdate();
        }
        if (amount == FAILING_AMOUNT) {
            throw new IllegalStateException("the payment failed after it was written");
        }
        // A relative Location as a plain header: Response.created() would make it absolute.
        return Response.status(201).header("Location", "/payments/" + id).type(MediaType.APPLICATION_JSON_TYPE)
                .entity("{\"id\":\"" + id + "\",\"account\":\"" + account + "\",\"amount\":" + amount + ",\"balance\":"
                        + (balance - amount) + ",\"createdAt\":\"" + createdAt + "\"}").build();
    }
}
