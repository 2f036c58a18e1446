package io.retrysafe.testservices;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.sql.DataSource;

/**
 * A table's definition as the database's own catalog holds it, as lines to compare: two tables made
 * by different tools are the same table when their lines are equal. Names are looked up in the
 * connection's default schema and shown without it.
 *
 * <p>PostgreSQL: the kind of relation and its partition key; each column's type, nullability, default
 * and collation; constraints; indexes; partitions with their bounds and indexes; and the functions
 * named {@code <table>_*} with their signatures and bodies. MariaDB: {@code SHOW CREATE TABLE}, the
 * server's rendering of its data dictionary (columns, character sets and collations, keys, checks,
 * engine).
 */
public final class TableCatalog {

    private TableCatalog() {}

    /** The definition of {@code table}; fails if there is no such table. */
    public static List<String> describe(DataSource ds, String table) {
        try (Connection c = ds.getConnection()) {
            String product = c.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
            if (product.contains("postgres")) {
                return postgres(c, table);
            }
            if (product.contains("mariadb") || product.contains("mysql")) {
                return rows(c, "SHOW CREATE TABLE " + table, null).stream()
                        .flatMap(row -> row.substring(row.indexOf(" | ") + 3).lines()).toList();
            }
            throw new IllegalArgumentException("no catalog query for " + product);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot read the catalog of " + table + ": " + e.getMessage(), e);
        }
    }

    private static List<String> postgres(Connection c, String table) throws SQLException {
        List<String> out = new ArrayList<>();
        List<String> kind = rows(c, "SELECT 'relation', c.relkind, pg_get_partkeydef(c.oid) FROM pg_class c"
                + " WHERE c.oid = to_regclass(?)", table);
        if (kind.isEmpty()) {
            throw new IllegalStateException("no table " + table + " in the connection's default schema");
        }
        out.addAll(kind);
        out.addAll(rows(c, "SELECT 'column', a.attname, format_type(a.atttypid, a.atttypmod),"
                + " CASE WHEN a.attnotnull THEN 'NOT NULL' ELSE 'NULL' END, pg_get_expr(d.adbin, d.adrelid), l.collname"
                + " FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                + " LEFT JOIN pg_collation l ON l.oid = a.attcollation"
                + " WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum", table));
        out.addAll(rows(c, "SELECT 'constraint', conname, contype, pg_get_constraintdef(oid) FROM pg_constraint"
                + " WHERE conrelid = to_regclass(?) ORDER BY conname", table));
        out.addAll(indexes(c, table));
        for (String partition : rows(c, "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
                + " WHERE i.inhparent = to_regclass(?) ORDER BY 1", table)) {
            out.addAll(rows(c, "SELECT 'partition', c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_class c"
                    + " WHERE c.oid = to_regclass(?)", partition));
            out.addAll(indexes(c, partition));
        }
        out.addAll(rows(c, "SELECT 'function', p.proname, pg_get_function_arguments(p.oid),"
                + " pg_get_function_result(p.oid), l.lanname, p.provolatile, p.prosrc"
                + " FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
                + " WHERE p.pronamespace = current_schema()::regnamespace AND starts_with(p.proname, ? || '_')"
                + " ORDER BY p.proname", table));
        String qualifier = rows(c, "SELECT current_schema()", null).get(0) + ".";
        return out.stream().map(line -> line.replace(qualifier, "")).toList();
    }

    private static List<String> indexes(Connection c, String table) throws SQLException {
        return rows(c, "SELECT 'index', i.relname, pg_get_indexdef(i.oid) FROM pg_index x"
                + " JOIN pg_class i ON i.oid = x.indexrelid WHERE x.indrelid = to_regclass(?) ORDER BY i.relname", table);
    }

    /** Each row as its columns joined by " | ". */
    private static List<String> rows(Connection c, String sql, String parameter) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            if (parameter != null) {
                ps.setString(1, parameter);
            }
            try (ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData md = rs.getMetaData();
                while (rs.next()) {
                    StringBuilder row = new StringBuilder();
                    for (int i = 1; i <= md.getColumnCount(); i++) {
                        row.append(i == 1 ? "" : " | ").append(rs.getString(i));
                    }
                    out.add(row.toString());
                }
            }
        }
        return out;
    }
}
