package io.retrysafe.examples.paymentsservice;

import io.retrysafe.PhasedOperation;
import io.retrysafe.Phases;
import io.retrysafe.StepCodec;
import io.retrysafe.examples.paymentsservice.ProviderClient.Charge;
import io.retrysafe.examples.paymentsservice.ProviderClient.ChargeResult;
import io.retrysafe.examples.paymentsservice.ProviderClient.Declined;
import io.retrysafe.examples.paymentscommon.Booking;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

/**
 * {@code POST /checkouts} as a phased operation: it calls the payment provider, so one database
 * transaction cannot hold it. Steps:
 *
 * <ol>
 * <li>{@code reserve} (local): a hold on the account's balance, in this service's database;</li>
 * <li>{@code charge} (foreign): the provider, under the key derived for the step, the same on every attempt, so
 * that the provider charges once whatever happens here;</li>
 * <li>{@code book} (local): the charge booked as a payment (account debited, ledger entry) and the hold consumed;
 * or, for a decline, {@code release} (local): the hold given back, and {@code 402}.</li>
 * </ol>
 *
 * <p>A retry, a takeover after a crash or the completer runs the same code: saved steps return their values. The
 * compensation, which the completer runs when it cannot go forward: give the hold back ({@code cancel}, first, so
 * that nothing can book the charge after it), find the charge made under the charge step's derived key
 * ({@code find-charge}), refund it ({@code refund}), record both ({@code cancelled}), and answer
 * {@code 402 checkout-cancelled}.
 */
@Configuration(proxyBeanMethods = false)
class Checkout {
    static final String NAME = "checkout";

    /** The hold a checkout reserved, or why it could not (stored as the answer then). */
    record Reservation(UUID hold, CheckoutAnswer refusal) {
    }

    /** The charge booked: the payment, the account's balance after it, the provider's charge. */
    record Booked(UUID payment, long balance, String charge) {
    }

    /** Registered as a bean: the controller runs it, and the starter's completer finds it by its name. */
    @Bean
    PhasedOperation<CheckoutRequest, CheckoutAnswer, Connection> checkoutOperation(ProviderClient provider,
            @Value("${payments.checkout.halt-at:}") String haltAt) {
        FaultHook hook = new FaultHook(haltAt);
        return PhasedOperation.of(NAME, CheckoutRequest.CODEC, CheckoutAnswer.CODEC,
                (CheckoutRequest request, Phases<Connection> phases) -> {
                    Reservation reservation = phases.local("reserve", RESERVATION, c -> reserve(c, request));
                    if (reservation.refusal() != null) {
                        return reservation.refusal();
                    }
                    hook.at("after-reserve");
                    ChargeResult charge = phases.foreign("charge", CHARGE, key -> {
                        hook.at("before-charge");
                        ChargeResult result = provider.charge(request.card(), request.amount(), key);
                        hook.at("inside-charge");
                        return result;
                    });
                    hook.at("after-charge");
                    if (charge instanceof Declined declined) {
                        phases.local("release", StepCodec.none(), c -> close(c, reservation.hold(), "RELEASED"));
                        return CheckoutAnswer.problem(402, "payment-declined", "Payment declined", "the payment provider "
                                + "declined the card: " + declined.message(), "\"code\":\"" + declined.code() + "\"");
                    }
                    Booked booked = phases.local("book", BOOKED, c -> book(c, request, reservation.hold(), (Charge) charge));
                    hook.at("after-book");
                    return CheckoutAnswer.completed(request, booked);
                })
                .withCompensation((CheckoutRequest request, Phases<Connection> phases) -> {
                    // Saved by every attempt before the completer could find the checkout: returned, not run.
                    Reservation reservation = phases.local("reserve", RESERVATION, c -> reserve(c, request));
                    if (reservation.refusal() != null) {
                        return reservation.refusal();
                    }
                    // The hold first: once it is cancelled, no attempt can book the charge any more, whatever runs
                    // after a crash in the middle of this (the forward path again included).
                    phases.local("cancel", StepCodec.none(), c -> close(c, reservation.hold(), "CANCELLED"));
                    // Whatever the charge step did, whether or not its answer was saved: the provider knows.
                    String chargeKey = phases.derivedKey("charge");
                    Optional<Charge> made = phases.foreign("find-charge", OPTIONAL_CHARGE,
                            unused -> provider.chargeMadeUnder(chargeKey));
                    String refund = made.isEmpty() ? null
                            : phases.foreign("refund", StepCodec.utf8(), key -> provider.refund(made.get().id(), key));
                    String charge = made.map(Charge::id).orElse(null);
                    phases.local("cancelled", StepCodec.none(), c -> refunded(c, reservation.hold(), charge, refund));
                    // 402, not 409: an answer the engine stores (it releases a 409, "try again"), and a client
                    // reads it as a payment that was not made, which it is.
                    return CheckoutAnswer.problem(402, "checkout-cancelled", "Checkout cancelled", "the checkout could "
                            + "not be completed and was cancelled: the hold on the account was released"
                            + (charge == null ? " and nothing was charged" : " and charge " + charge + " was refunded"),
                            null);
                });
    }

    /** Sets the amount aside: locks the account, checks what its balance and its other holds leave, adds a hold. */
    static Reservation reserve(Connection c, CheckoutRequest request) {
        JdbcTemplate jdbc = on(c);
        List<Long> balances = jdbc.queryForList("SELECT balance FROM account WHERE id = ? FOR UPDATE", Long.class,
                request.account());
        if (balances.isEmpty()) {
            return new Reservation(null, CheckoutAnswer.problem(404, "unknown-account", "Unknown account",
                    "there is no account " + request.account(), null));
        }
        long held = jdbc.queryForObject("SELECT coalesce(sum(amount), 0) FROM checkout_hold WHERE account = ? AND status = "
                + "'HELD'", Long.class, request.account());
        long available = balances.get(0) - held;
        if (available < request.amount()) {
            return new Reservation(null, CheckoutAnswer.problem(402, "insufficient-funds", "Insufficient funds",
                    "account " + request.account() + " has " + available + " available, the checkout needs "
                            + request.amount(), "\"balance\":" + available));
        }
        UUID hold = UUID.randomUUID();
        jdbc.update("INSERT INTO checkout_hold (id, payer, account, amount, status) VALUES (?, ?, ?, ?, 'HELD')", hold,
                request.payer(), request.account(), request.amount());
        return new Reservation(hold, null);
    }

    /** Books the charge: the account debited, the payment and its ledger entry written, the hold consumed. */
    static Booked book(Connection c, CheckoutRequest request, UUID hold, Charge charge) {
        JdbcTemplate jdbc = on(c);
        long balance = jdbc.queryForObject("SELECT balance FROM account WHERE id = ? FOR UPDATE", Long.class,
                request.account());
        Booking.Booked booked = Ledger.debit(jdbc, request.payer(), request.account(), request.amount(), balance);
        if (jdbc.update("UPDATE checkout_hold SET status = 'BOOKED', charge = ?, payment = ? WHERE id = ? AND status = 'HELD'",
                charge.id(), booked.paymentId(), hold) != 1) {
            throw new IllegalStateException("hold " + hold + " is not held: it cannot be booked");
        }
        return new Booked(booked.paymentId(), booked.balance(), charge.id());
    }

    /** Gives the hold back: {@code RELEASED} (declined) or {@code CANCELLED} (the checkout given up). */
    static Void close(Connection c, UUID hold, String status) {
        if (on(c).update("UPDATE checkout_hold SET status = ? WHERE id = ? AND status = 'HELD'", status, hold) != 1) {
            throw new IllegalStateException("hold " + hold + " is not held: it cannot be " + status.toLowerCase());
        }
        return null;
    }

    /** Records on a cancelled hold the charge the provider made for it, and its refund (both null when none). */
    static Void refunded(Connection c, UUID hold, String charge, String refund) {
        on(c).update("UPDATE checkout_hold SET charge = ?, refund = ? WHERE id = ? AND status = 'CANCELLED'", charge,
                refund, hold);
        return null;
    }

    /** JDBC on a step's connection, inside its transaction: the step commits or rolls back, not this. */
    private static JdbcTemplate on(Connection c) {
        return new JdbcTemplate(new SingleConnectionDataSource(c, true));
    }

    private static String[] fields(byte[] saved) {
        return new String(saved, StandardCharsets.UTF_8).split("\n", -1);
    }

    private static byte[] join(String... fields) {
        return String.join("\n", fields).getBytes(StandardCharsets.UTF_8);
    }

    static final StepCodec<Reservation> RESERVATION = new StepCodec<>() {
        @Override
        public byte[] encode(Reservation r) {
            return r.hold() != null ? join("held", r.hold().toString())
                    : join("refused", Integer.toString(r.refusal().status()), r.refusal().body());
        }

        @Override
        public Reservation decode(byte[] saved) {
            String[] f = fields(saved);
            return f[0].equals("held") ? new Reservation(UUID.fromString(f[1]), null)
                    : new Reservation(null, new CheckoutAnswer(Integer.parseInt(f[1]), null, f[2]));
        }
    };

    static final StepCodec<ChargeResult> CHARGE = new StepCodec<>() {
        @Override
        public byte[] encode(ChargeResult result) {
            return result instanceof Charge charge ? join("charged", charge.id(), Long.toString(charge.amount()))
                    : join("declined", ((Declined) result).code(), ((Declined) result).message());
        }

        @Override
        public ChargeResult decode(byte[] saved) {
            String[] f = fields(saved);
            return f[0].equals("charged") ? new Charge(f[1], Long.parseLong(f[2])) : new Declined(f[1], f[2]);
        }
    };

    static final StepCodec<Optional<Charge>> OPTIONAL_CHARGE = new StepCodec<>() {
        @Override
        public byte[] encode(Optional<Charge> charge) {
            return charge.map(CHARGE::encode).orElseGet(() -> new byte[0]);
        }

        @Override
        public Optional<Charge> decode(byte[] saved) {
            return saved.length == 0 ? Optional.empty() : Optional.of((Charge) CHARGE.decode(saved));
        }
    };

    static final StepCodec<Booked> BOOKED = new StepCodec<>() {
        @Override
        public byte[] encode(Booked b) {
            return join(b.payment().toString(), Long.toString(b.balance()), b.charge());
        }

        @Override
        public Booked decode(byte[] saved) {
            String[] f = fields(saved);
            return new Booked(UUID.fromString(f[0]), Long.parseLong(f[1]), f[2]);
        }
    };

    /**
     * A fault hook for tests, off unless {@code payments.checkout.halt-at} names a point: {@code after-reserve},
     * {@code before-charge} (inside the charge step, before the request), {@code inside-charge} (inside the
     * charge step, after the provider answered), {@code after-charge} or {@code after-book}. The first checkout
     * to reach it halts the JVM there ({@link Runtime#halt}: no shutdown hooks, nothing rolled back by the
     * service), as a crash would. Never set in production.
     */
    static final class FaultHook {
        private final String point;

        FaultHook(String point) {
            this.point = point == null || point.isBlank() ? null : point.strip();
        }

        void at(String here) {
            if (here.equals(point)) {
                System.err.println("payments.checkout.halt-at=" + point + ": halting the service (a test's fault hook)");
                System.err.flush();
                Runtime.getRuntime().halt(137);
            }
        }
    }
}
