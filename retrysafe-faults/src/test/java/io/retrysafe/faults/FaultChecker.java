package io.retrysafe.faults;

import io.retrysafe.examples.paymentsservice.provider.ProviderAdmin.Charge;
import io.retrysafe.faults.PaymentClient.Answer;
import io.retrysafe.faults.PaymentClient.Intent;
import io.retrysafe.faults.PaymentClient.Kind;
import io.retrysafe.faults.Workload.Log;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Proves the invariants after a run, from the database (read directly, not through the proxy), the
 * payment provider's charges and the clients' logs:
 * <ol>
 * <li>every intent was answered for good, and took effect exactly once: a {@code 201} intent has
 *     exactly one payment, the one its answer names; no payment exists that no intent asked for;
 * <li>every answer an intent got is the same (status and body), the retryable refusals aside
 *     (network errors, 408, 409, 425, 429, 5xx), duplicates in flight included; no other status
 *     than {@code 201} for a payment (the workload sends only valid payments it can afford), than
 *     {@code 201} or {@code 402} (cancelled by the completer) for a checkout;
 * <li>no key is left {@code IN_PROGRESS} past its lease, and every answered key is
 *     {@code COMPLETED} with the status its client got;
 * <li>balances add up: each account's balance is its opening balance less its payments, and its
 *     ledger has one entry per payment, summing to the same;
 * <li>checkouts, from the provider's charges and the service's tables, not from the answers: each
 *     intent charged at most once (the charges of its card), reserved at most once and booked at most
 *     once; once the completer has run, none left {@code HELD}, and each either charged and booked (one
 *     payment, its hold {@code BOOKED} with that payment and that charge) or not charged, or refunded,
 *     and not booked, its hold given back; a {@code 402} is a cancelled hold; no charge or hold that no
 *     intent asked for; a checkout account's booked holds are its payments.
 * </ol>
 */
final class FaultChecker {
    private static final Pattern PAYMENT_ID = Pattern.compile("\"id\":\"([0-9a-f-]{36})\"");

    private final List<String> violations = new ArrayList<>();
    private long total;
    private String checkouts = "none";

    /** The first 200 violations, and a marker when there were more. */
    List<String> violations() {
        return violations;
    }

    /** Every violation, counted also past the 200 that are listed. */
    long total() {
        return total;
    }

    /** The checkouts in figures: intents, final answers, charges, holds by status. */
    String checkouts() {
        return checkouts;
    }

    private void violation(String what) {
        total++;
        if (violations.size() < 200) {
            violations.add(what);
        } else if (violations.size() == 200) {
            violations.add("… more violations left out");
        }
    }

    /** @param charges every charge the payment provider made, from its {@code GET /charges} */
    FaultChecker check(Connection db, List<Log> logs, Map<String, Long> openingBalances, List<Charge> charges)
            throws SQLException {
        Map<String, Map<Long, List<String>>> payments = payments(db);
        boolean hasRecords = hasTable(db, "retrysafe_record");
        if (!hasRecords) {
            violation("there is no retrysafe_record table: the service ran without RetrySafe");
        }
        Map<String, String> records = hasRecords ? records(db) : Map.of();
        Map<String, Map<Long, Boolean>> asked = new HashMap<>();
        for (Log log : logs) {
            asked.computeIfAbsent(log.intent.account(), a -> new HashMap<>()).put(log.intent.amount(), true);
            checkIntent(log, payments, hasRecords ? records : null);
        }
        // A payment no intent asked for.
        payments.forEach((account, byAmount) -> byAmount.forEach((amount, ids) -> {
            if (!asked.getOrDefault(account, Map.of()).containsKey(amount)) {
                violation("payment(s) " + ids + " of " + amount + " on " + account + " match no intent");
            }
        }));
        if (hasRecords) {
            long stuck = count(db, "SELECT count(*) FROM retrysafe_record WHERE status = 'IN_PROGRESS'"
                    + " AND lease_expires_at < now()");
            if (stuck > 0) {
                violation(stuck + " key(s) left IN_PROGRESS past their lease");
            }
        }
        checkBalances(db, openingBalances);
        checkCheckouts(db, logs.stream().filter(l -> l.intent.kind() == Kind.CHECKOUT).toList(), payments, charges);
        return this;
    }

    private void checkIntent(Log log, Map<String, Map<Long, List<String>>> payments, Map<String, String> records) {
        String who = "intent " + log.intent.key() + " (" + log.intent.account() + ", " + log.intent.amount() + ")";
        List<Answer> answers = log.answers();
        List<String> ids = payments.getOrDefault(log.intent.account(), Map.of()).getOrDefault(log.intent.amount(),
                List.of());
        Answer fin = log.finalAnswer;
        if (fin == null) {
            violation(who + " was never answered for good; its answers: " + labels(answers));
            if (ids.size() > 1) {
                violation(who + " took effect " + ids.size() + " times: " + ids);
            }
            return;
        }
        if (!log.intent.kind().finalStatuses.contains(fin.status())) {
            violation(who + " was answered " + fin.status() + ": " + fin.body());
        }
        Answer first = null;
        for (Answer a : answers) {
            if (a.retryable()) {
                continue;
            }
            if (first == null) {
                first = a;
            } else if (a.status() != first.status() || !Objects.equals(a.body(), first.body())) {
                violation(who + " got two different answers: " + first.status() + " " + first.body() + " and "
                        + a.status() + " " + a.body());
            }
        }
        if (fin.status() == 201) {
            Matcher m = PAYMENT_ID.matcher(fin.body());
            String answeredId = m.find() ? m.group(1) : null;
            if (ids.size() != 1) {
                violation(who + " answered 201 took effect " + ids.size() + " times: " + ids);
            } else if (!ids.get(0).equals(answeredId)) {
                violation(who + " was answered with payment " + answeredId + " but the payment is " + ids.get(0));
            }
        } else if (!ids.isEmpty()) {
            violation(who + " answered " + fin.status() + " took effect " + ids.size() + " times: " + ids);
        }
        String record = records == null ? null : records.get(log.intent.key());
        if (records != null && (record == null || !record.equals("COMPLETED " + fin.status()))) {
            violation(who + " answered " + fin.status() + " has the record " + record);
        }
    }

    /** A checkout's hold, as the service's {@code checkout_hold} table has it. */
    private record Hold(String id, String status, String payment, String charge, String refund) {
    }

    private void checkCheckouts(Connection db, List<Log> logs, Map<String, Map<Long, List<String>>> payments,
            List<Charge> charges) throws SQLException {
        Map<String, List<Charge>> byCard = charges.stream().collect(Collectors.groupingBy(Charge::card));
        Map<String, Map<Long, List<Hold>>> holds = holds(db);
        Set<String> cards = new HashSet<>();
        Map<String, Set<Long>> asked = new HashMap<>();
        Map<String, Long> answered = new TreeMap<>();
        for (Log log : logs) {
            Intent intent = log.intent;
            cards.add(intent.card());
            asked.computeIfAbsent(intent.account(), a -> new HashSet<>()).add(intent.amount());
            answered.merge(log.finalAnswer == null ? "unanswered" : log.finalAnswer.label(), 1L, Long::sum);
            checkCheckout(log, byCard.getOrDefault(intent.card(), List.of()),
                    holds.getOrDefault(intent.account(), Map.of()).getOrDefault(intent.amount(), List.of()),
                    payments.getOrDefault(intent.account(), Map.of()).getOrDefault(intent.amount(), List.of()));
        }
        for (Charge c : charges) {
            if (!cards.contains(c.card())) {
                violation("charge " + c + " is of a card no checkout intent has");
            }
        }
        Map<String, Long> byStatus = new TreeMap<>();
        holds.forEach((account, byAmount) -> byAmount.forEach((amount, those) -> {
            those.forEach(h -> byStatus.merge(h.status(), 1L, Long::sum));
            if (!asked.getOrDefault(account, Set.of()).contains(amount)) {
                violation("hold(s) " + those + " of " + amount + " on " + account + " match no checkout intent");
            }
        }));
        // A checkout account's balance is its opening balance less its payments (checkBalances): those must be
        // its booked holds, one payment a hold, of the hold's amount.
        try (PreparedStatement ps = db.prepareStatement("SELECT"
                + " (SELECT count(*) FROM payment p WHERE p.account = ?),"
                + " (SELECT count(*) FROM checkout_hold h JOIN payment p ON p.id = h.payment AND p.amount = h.amount"
                + " AND p.account = h.account WHERE h.account = ? AND h.status = 'BOOKED')")) {
            for (String account : asked.keySet()) {
                ps.setString(1, account);
                ps.setString(2, account);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getLong(1) != rs.getLong(2)) {
                        violation("checkout account " + account + " has " + rs.getLong(1) + " payment(s) but "
                                + rs.getLong(2) + " booked hold(s) of the same payment and amount");
                    }
                }
            }
        }
        checkouts = logs.size() + " intents, final answers " + answered + "; provider charges " + charges.size()
                + " (refunded " + charges.stream().filter(Charge::refunded).count() + "); holds " + byStatus;
    }

    /** One checkout intent: its card's charges, its holds and its payments. */
    private void checkCheckout(Log log, List<Charge> charged, List<Hold> holds, List<String> payments) {
        Intent intent = log.intent;
        String who = "checkout " + intent.key() + " (" + intent.account() + ", " + intent.amount() + ", card "
                + intent.card() + ")";
        if (charged.size() > 1) {
            violation(who + " was charged " + charged.size() + " times: " + charged);
        }
        for (Charge c : charged) {
            if (c.amount() != intent.amount()) {
                violation(who + " was charged " + c.amount() + ": " + c);
            }
        }
        if (holds.size() > 1) {
            violation(who + " was reserved " + holds.size() + " times: " + holds);
        }
        List<Hold> booked = holds.stream().filter(h -> h.status().equals("BOOKED")).toList();
        if (payments.size() > 1 || booked.size() > 1) {
            violation(who + " was booked more than once: payments " + payments + ", holds " + holds);
        }
        if (holds.stream().anyMatch(h -> h.status().equals("HELD"))) {
            violation(who + " is still HELD after the completer ran: " + holds + ", charges " + charged);
        }
        Charge kept = charged.stream().filter(c -> !c.refunded()).findFirst().orElse(null);
        if (kept != null) {
            if (payments.size() != 1 || booked.size() != 1) {
                violation(who + " was charged (" + kept.id() + ") but not booked: holds " + holds + ", payments "
                        + payments);
            } else if (!payments.get(0).equals(booked.get(0).payment()) || !kept.id().equals(booked.get(0).charge())) {
                violation(who + " is booked as " + booked.get(0) + " but its payment is " + payments.get(0)
                        + " and its charge " + kept.id());
            }
        } else {
            if (!payments.isEmpty() || !booked.isEmpty()) {
                violation(who + " was booked but " + (charged.isEmpty() ? "never charged" : "its charge was refunded")
                        + ": holds " + holds + ", payments " + payments + ", charges " + charged);
            }
            // A hold neither HELD nor BOOKED (both reported above) was given back: CANCELLED or RELEASED.
            if (!charged.isEmpty() && holds.stream().noneMatch(h -> h.status().equals("CANCELLED")
                    && charged.get(0).id().equals(h.charge()) && h.refund() != null)) {
                violation(who + " was refunded (" + charged + ") but no cancelled hold records it: " + holds);
            }
        }
        if (log.finalAnswer != null && log.finalAnswer.status() == 402
                && (holds.size() != 1 || !holds.get(0).status().equals("CANCELLED"))) {
            violation(who + " was answered 402 (" + log.finalAnswer.body() + ") but its holds are " + holds);
        }
    }

    /** account → amount → holds. */
    private static Map<String, Map<Long, List<Hold>>> holds(Connection db) throws SQLException {
        Map<String, Map<Long, List<Hold>>> holds = new HashMap<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT account, amount, id, status, payment, charge, refund FROM checkout_hold")) {
            while (rs.next()) {
                holds.computeIfAbsent(rs.getString(1), a -> new HashMap<>())
                        .computeIfAbsent(rs.getLong(2), a -> new ArrayList<>())
                        .add(new Hold(rs.getString(3), rs.getString(4), rs.getString(5), rs.getString(6),
                                rs.getString(7)));
            }
        }
        return holds;
    }

    /** Holds still {@code HELD}: checkouts that neither booked their charge nor gave their hold back. */
    static long heldHolds(Connection db) throws SQLException {
        return count(db, "SELECT count(*) FROM checkout_hold WHERE status = 'HELD'");
    }

    /**
     * Phased operations (checkouts) with steps saved in this life of their record that are not completed: in
     * progress, or released for the completer; 0 without RetrySafe's table.
     */
    static long unfinishedPhases(Connection db) throws SQLException {
        return hasTable(db, "retrysafe_record") ? count(db, "SELECT count(*) FROM retrysafe_record"
                + " WHERE phase_created_at = created_at AND status <> 'COMPLETED'") : 0;
    }

    private static long count(Connection db, String sql) throws SQLException {
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static boolean hasTable(Connection db, String table) throws SQLException {
        try (PreparedStatement ps = db.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private void checkBalances(Connection db, Map<String, Long> openingBalances) throws SQLException {
        try (PreparedStatement ps = db.prepareStatement("SELECT a.balance,"
                + " (SELECT coalesce(sum(amount), 0) FROM payment p WHERE p.account = a.id),"
                + " (SELECT count(*) FROM payment p WHERE p.account = a.id),"
                + " (SELECT coalesce(sum(delta), 0) FROM ledger l WHERE l.account = a.id),"
                + " (SELECT count(*) FROM ledger l WHERE l.account = a.id)"
                + " FROM account a WHERE a.id = ?")) {
            for (Map.Entry<String, Long> e : openingBalances.entrySet()) {
                ps.setString(1, e.getKey());
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    long balance = rs.getLong(1);
                    long paid = rs.getLong(2);
                    long count = rs.getLong(3);
                    long ledger = rs.getLong(4);
                    long entries = rs.getLong(5);
                    if (balance != e.getValue() - paid || ledger != -paid || entries != count) {
                        violation("account " + e.getKey() + " does not add up: opened with " + e.getValue()
                                + ", balance " + balance + ", payments " + count + " summing to " + paid
                                + ", ledger entries " + entries + " summing to " + ledger);
                    }
                }
            }
        }
    }

    /** account → amount → payment ids. */
    private static Map<String, Map<Long, List<String>>> payments(Connection db) throws SQLException {
        Map<String, Map<Long, List<String>>> payments = new HashMap<>();
        try (Statement s = db.createStatement();
                ResultSet rs = s.executeQuery("SELECT account, amount, id FROM payment")) {
            while (rs.next()) {
                payments.computeIfAbsent(rs.getString(1), a -> new HashMap<>())
                        .computeIfAbsent(rs.getLong(2), a -> new ArrayList<>()).add(rs.getString(3));
            }
        }
        return payments;
    }

    /** key → "STATUS response_status". */
    private static Map<String, String> records(Connection db) throws SQLException {
        Map<String, String> records = new HashMap<>();
        try (Statement s = db.createStatement();
                ResultSet rs = s.executeQuery("SELECT idem_key, status, response_status FROM retrysafe_record")) {
            while (rs.next()) {
                records.put(rs.getString(1), rs.getString(2) + " " + rs.getObject(3));
            }
        }
        return records;
    }

    static String labels(List<Answer> answers) {
        StringBuilder b = new StringBuilder();
        for (Answer a : answers) {
            b.append(b.length() == 0 ? "" : ", ").append(a.failed() ? a.failure() : a.label());
        }
        return b.toString();
    }

    private static final Pattern PROBLEM_TYPE = Pattern.compile("\"type\":\"([^\"]*)\"");

    /** The refusals (409, 429, 5xx) by status and problem type, to tell what the faults made the service say. */
    static Map<String, Long> refusals(List<Log> logs) {
        Map<String, Long> counts = new TreeMap<>();
        for (Log log : logs) {
            for (Answer a : log.answers()) {
                if (a.status() == 409 || a.status() == 429 || a.status() >= 500) {
                    Matcher m = PROBLEM_TYPE.matcher(a.body() == null ? "" : a.body());
                    // Without a problem type, the body without its time stamp tells which error it is.
                    String body = a.body() == null ? "" : a.body().replaceAll("\"timestamp\":\"[^\"]*\",?", "");
                    counts.merge(a.status() + " " + (m.find() ? m.group(1)
                            : "(no problem type) " + body.substring(0, Math.min(120, body.length()))), 1L, Long::sum);
                }
            }
        }
        return counts;
    }

    /** Answers by status over all logs ("io-error" for network failures), sorted. */
    static Map<String, Long> byStatus(List<Log> logs) {
        Map<String, Long> counts = new TreeMap<>();
        for (Log log : logs) {
            for (Answer a : log.answers()) {
                counts.merge(a.label(), 1L, Long::sum);
            }
        }
        return counts;
    }
}
