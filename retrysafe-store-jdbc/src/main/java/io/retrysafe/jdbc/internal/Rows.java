package io.retrysafe.jdbc.internal;

import io.retrysafe.Fingerprint;
import io.retrysafe.StoredResponse;
import io.retrysafe.internal.HeaderCodec;
import io.retrysafe.spi.FoundRecord;
import io.retrysafe.spi.RecordStatus;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;

/** Reading a record's columns, the same in every dialect. */
final class Rows {
    private Rows() {
    }

    /**
     * The record a claim found, from six columns starting at {@code first}: fingerprint, status,
     * response status, response headers, response body, and the lease left in milliseconds (by the
     * database's clock).
     */
    static FoundRecord found(ResultSet rs, int first, boolean expired) throws SQLException {
        return new FoundRecord(Fingerprint.of(rs.getBytes(first)), RecordStatus.valueOf(rs.getString(first + 1)), expired,
                Duration.ofMillis(rs.getLong(first + 5)), response(rs, first + 2));
    }

    /**
     * The stored response from three columns starting at {@code first} (status, headers, body); null
     * if none is stored. A NULL body is the empty body.
     */
    static StoredResponse response(ResultSet rs, int first) throws SQLException {
        if (rs.getObject(first) == null) {
            return null;
        }
        byte[] body = rs.getBytes(first + 2);
        return StoredResponse.of(rs.getInt(first), HeaderCodec.decode(rs.getString(first + 1)),
                body == null ? new byte[0] : body);
    }
}
