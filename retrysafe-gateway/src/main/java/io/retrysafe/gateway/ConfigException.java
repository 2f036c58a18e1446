package io.retrysafe.gateway;

/**
 * A configuration the gateway refuses to start with: where (file, line and column, counted from 1) and why.
 * Its message is what the gateway prints before it exits; no stack trace.
 */
public final class ConfigException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String file;
    private final int line;
    private final int column;
    private final String reason;

    public ConfigException(String file, int line, int column, String reason) {
        super(file + ":" + line + ":" + column + ": " + reason);
        this.file = file;
        this.line = line;
        this.column = column;
        this.reason = reason;
    }

    public String file() {
        return file;
    }

    /** 1-based; 0 when the problem has no place in the file (a missing file). */
    public int line() {
        return line;
    }

    /** 1-based; 0 when the problem has no place in the file. */
    public int column() {
        return column;
    }

    public String reason() {
        return reason;
    }
}
