package io.retrysafe.jdbc.internal;

import io.retrysafe.sql.Schema;


/**
 * The statements of one database for one table, by job: the request path ({@link #requests()}), the
 * operators' queries ({@link #operators()}), the purge ({@link #maintenance()}), phased operations'
 * saved steps ({@link #phases()}) and, for PostgreSQL's
 * partitioned layout, the partition maintenance ({@link #partitions()}); and the table's shipped DDL.
 * Every statement takes the connection it runs on and leaves transaction control to the caller,
 * except where it says otherwise. Time is always the database's clock.
 */
public final class SqlDialect {
    private final String table;
    private final Schema schema;
    private final RequestSql requests;
    private final OperatorSql operators;
    private final MaintenanceSql maintenance;
    private final PostgresPartitionSql partitions;
    private final PhaseSql phases;

    private SqlDialect(String table, Schema schema, RequestSql requests, OperatorSql operators,
            MaintenanceSql maintenance, PostgresPartitionSql partitions, PhaseSql phases) {
        this.phases = phases;
        this.table = table;
        this.schema = schema;
        this.requests = requests;
        this.operators = operators;
        this.maintenance = maintenance;
        this.partitions = partitions;
    }

    /** PostgreSQL with {@code layout} ({@link PostgresStandardLayout} or {@link PostgresPartitionedLayout}). */
    public static SqlDialect postgres(String table, PostgresLayout layout) {
        return new SqlDialect(table, layout.schema(), new PostgresRequestSql(table, layout),
                new PostgresOperatorSql(table, layout), new PostgresMaintenanceSql(layout),
                layout instanceof PostgresPartitionedLayout partitioned ? partitioned.partitions() : null,
                PhaseSql.postgres(table));
    }

    public static SqlDialect mariaDb(String table) {
        return new SqlDialect(table, Schema.MARIADB, new MariaDbRequestSql(table),
                new MariaDbOperatorSql(table), new MariaDbMaintenanceSql(table), null, PhaseSql.mariaDb(table));
    }

    public RequestSql requests() {
        return requests;
    }

    public OperatorSql operators() {
        return operators;
    }

    public MaintenanceSql maintenance() {
        return maintenance;
    }

    /** The saved steps of phased operations. */
    public PhaseSql phases() {
        return phases;
    }

    /** The partition maintenance of PostgreSQL's partitioned layout. */
    public PostgresPartitionSql partitions() {
        if (partitions == null) {
            throw new IllegalStateException("table " + table + " is not partitioned");
        }
        return partitions;
    }

    /** The DDL for this table, as shipped in the schema resource. */
    public String schema() {
        return schema.forTable(table);
    }

    public String table() {
        return table;
    }
}
