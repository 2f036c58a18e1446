package io.retrysafe.faults;

import io.retrysafe.faults.PaymentClient.Answer;
import io.retrysafe.faults.Workload.Log;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Proves the invariants after a run, from the database (read directly, not through the proxy) and
 * the clients' logs:
 * <ol>
 * <li>every intent was answered for good, and took effect exactly once: a {@code 201} intent has
 *     exactly one payment, the one its answer names; no payment exists that no intent asked for;
 * <li>every answer an intent got is the same (status and body), the retryable refusals aside
 *     (network errors, 408, 409, 425, 429, 5xx), duplicates in flight included; no other status
 *     than {@code 201} (the workload sends only valid payments it can afford);
 * <li>no key is left {@code IN_PROGRESS} past its lease, and every answered key is
 *     {@code COMPLETED} with the status its client got;
 * <li>balances add up: each account's balance is its opening balance less its payments, and its
 *     ledger has one entry per payment, summing to the same.
 * </ol>
 */
final class FaultChecker {
    private static final Pattern PAYMENT_ID = Pattern.compile("\"id\":\"([0-9a-f-]{36})\"");

    private final List<String> violations = new ArrayList<>();
    private long total;

    /** The first 200 violations, and a marker when there were more. */
    List<String> violations() {
        return violations;
    }

    /** Every violation, counted also past the 200 that are listed. */
    long total() {
        return total;
    }

    private void violation(String what) {
        total++;
        if (violations.size() < 200) {
            violations.add(what);
        } else if (violations.size() == 200) {
            violations.add("… more violations left out");
        }
    }

    FaultChecker check(Connection db, List<Log> logs, Map<String, Long> openingBalances) throws SQLException {
        Map<String, Map<Long, List<String>>> payments = payments(db);
        boolean hasRecords;
        try (Statement s = db.createStatement();
                ResultSet rs = s.executeQuery("SELECT to_regclass('retrysafe_record') IS NOT NULL")) {
            rs.next();
            hasRecords = rs.getBoolean(1);
        }
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
            try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FROM"
                    + " retrysafe_record WHERE status = 'IN_PROGRESS' AND lease_expires_at < now()")) {
                rs.next();
                if (rs.getLong(1) > 0) {
                    violation(rs.getLong(1) + " key(s) left IN_PROGRESS past their lease");
                }
            }
        }
        checkBalances(db, openingBalances);
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
        if (fin.status() != 201) {
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
