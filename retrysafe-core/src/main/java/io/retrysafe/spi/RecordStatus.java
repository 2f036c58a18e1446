package io.retrysafe.spi;

/** The states of a record; the names are stored as they are. */
public enum RecordStatus {
    IN_PROGRESS, COMPLETED, FAILED
}
