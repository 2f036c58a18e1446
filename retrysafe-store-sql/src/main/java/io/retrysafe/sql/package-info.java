/**
 * What the SQL stores (JDBC and R2DBC) share about the records table: its shipped DDL, the statements
 * more than one store sends, bind markers, table names and the builders' common options. No driver is
 * needed here. Not an API for applications: it changes with the stores that use it.
 */
package io.retrysafe.sql;
