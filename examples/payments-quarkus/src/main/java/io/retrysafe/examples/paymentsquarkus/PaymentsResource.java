package io.retrysafe.examples.paymentsquarkus;

import io.agroal.api.AgroalDataSource;
import io.retrysafe.jaxrs.RetrySafeFeature;
import io.retrysafe.quarkus.RetrySafeConfig;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code POST /payments}: takes an amount off an account and records the payment. RetrySafe stands in front of it
 * (application.properties): in transactional mode its writes go to the connection of the request's transaction, so
 * the payment, the key and the stored answer commit together; in standalone mode, or with RetrySafe off, to a
 * transaction of its own.
 */
@Path("/payments")
public class PaymentsResource {
    private static final Pattern ACCOUNT = Pattern.compile("\"account\"\\s*:\\s*\"([A-Za-z0-9-]{1,64})\"");
    private static final Pattern AMOUNT = Pattern.compile("\"amount\"\\s*:\\s*(\\d{1,12})");

    @Inject
    AgroalDataSource dataSource;

    @Inject
    RetrySafeConfig retrySafe;

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    public Response pay(String body, @Context SecurityContext security) throws SQLException {
        Matcher account = ACCOUNT.matcher(body);
        Matcher amount = AMOUNT.matcher(body);
        if (!account.find() || !amount.find() || Long.parseLong(amount.group(1)) <= 0) {
            return Response.status(400).type("application/problem+json").entity("{\"type\":\"/problems/"
                    + "invalid-payment\",\"title\":\"A payment needs an account and a positive amount\",\"status\":400}")
                    .build();
        }
        String payer = security.getUserPrincipal() == null ? "anonymous" : security.getUserPrincipal().getName();
        if (retrySafe.enabled() && retrySafe.mode() == RetrySafeConfig.Mode.TRANSACTIONAL) {
            return pay(RetrySafeFeature.connection(), payer, account.group(1), Long.parseLong(amount.group(1)));
        }
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            Response answer = pay(c, payer, account.group(1), Long.parseLong(amount.group(1)));
            c.commit();
            return answer;
        }
    }

    private static Response pay(Connection c, String payer, String account, long amount) throws SQLException {
        long balance;
        try (PreparedStatement select = c.prepareStatement("SELECT balance FROM account WHERE id = ? FOR UPDATE")) {
            select.setString(1, account);
            try (ResultSet rs = select.executeQuery()) {
                if (!rs.next()) {
                    return Response.status(404).type("application/problem+json").entity("{\"type\":\"/problems/"
                            + "unknown-account\",\"title\":\"No such account\",\"status\":404}").build();
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
                PreparedStatement insert = c.prepareStatement(
                        "INSERT INTO payment (id, payer, account, amount, created_at) VALUES (?, ?, ?, ?, ?)")) {
            update.setLong(1, amount);
            update.setString(2, account);
            update.executeUpdate();
            insert.setObject(1, id);
            insert.setString(2, payer);
            insert.setString(3, account);
            insert.setLong(4, amount);
            insert.setObject(5, java.sql.Timestamp.from(createdAt));
            insert.executeUpdate();
        }
        // A relative Location as a plain header: Response.created() would make it absolute.
        return Response.status(201).header("Location", "/payments/" + id).type(MediaType.APPLICATION_JSON_TYPE)
                .entity("{\"id\":\"" + id + "\",\"account\":\"" + account + "\",\"amount\":" + amount + ",\"balance\":"
                        + (balance - amount) + ",\"createdAt\":\"" + createdAt + "\"}").build();
    }
}
