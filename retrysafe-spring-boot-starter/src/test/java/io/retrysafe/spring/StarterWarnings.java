package io.retrysafe.spring;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The WARN lines the starter logs while a test listens. The starter logs through System.Logger, which is
 * java.util.logging unless the application says otherwise.
 */
final class StarterWarnings extends Handler {
    /** Held here: java.util.logging keeps its loggers only weakly. */
    private final Logger starterLogger = Logger.getLogger("io.retrysafe.spring");
    private final List<String> warnings = new CopyOnWriteArrayList<>();

    /** Listens until {@link #close()}. */
    static StarterWarnings listen() {
        StarterWarnings listening = new StarterWarnings();
        listening.starterLogger.addHandler(listening);
        return listening;
    }

    List<String> warnings() {
        return warnings;
    }

    @Override
    public void publish(LogRecord record) {
        if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
            warnings.add(record.getMessage());
        }
    }

    @Override
    public void flush() {
    }

    @Override
    public void close() {
        starterLogger.removeHandler(this);
    }
}
