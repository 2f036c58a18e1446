package io.retrysafe.examples.paymentsservice;

import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Repository;

/** Accounts, updated under optimistic concurrency: the version is the update's key. */
@Repository
class Accounts {
    private static final RowMapper<Account> ACCOUNT = (rs, n) -> new Account(rs.getString(1), rs.getString(2),
            rs.getLong(3), rs.getLong(4));

    private final JdbcTemplate jdbc;

    Accounts(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    record Account(String id, String label, long balance, long version) {
        /** The strong entity tag of this version: {@code "v7"}. */
        String etag() {
            return "\"v" + version + "\"";
        }
    }

    Optional<Account> find(String id) {
        return jdbc.query("SELECT id, label, balance, version FROM account WHERE id = ?", ACCOUNT, id).stream()
                .findFirst();
    }

    /**
     * Relabels the account if it is still at one of {@code versions}, in one statement: the
     * database, not a read followed by a write, decides. Empty when it is not (stale or absent).
     */
    Optional<Account> relabel(String id, Collection<Long> versions, String label) {
        if (versions.isEmpty()) {
            return Optional.empty();
        }
        String in = String.join(", ", Collections.nCopies(versions.size(), "?"));
        Object[] args = Stream.concat(Stream.of(label, id), versions.stream()).toArray();
        List<Account> updated = jdbc.query("UPDATE account SET label = ?, version = version + 1"
                + " WHERE id = ? AND version IN (" + in + ") RETURNING id, label, balance, version", ACCOUNT, args);
        return updated.stream().findFirst();
    }
}
