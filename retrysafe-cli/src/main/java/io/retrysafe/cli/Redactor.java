package io.retrysafe.cli;

import java.sql.SQLException;
import java.util.regex.Pattern;

/** Keeps passwords out of everything a command prints, and errors on one line. */
final class Redactor {
    private static final Pattern URL_PASSWORD = Pattern.compile("(?i)(password=)[^&;\\s)]*");
    private static final Pattern USER_INFO = Pattern.compile("(//[^/:@\\s]*:)[^@/\\s]*@");

    private final String password;

    Redactor(String password) {
        this.password = password;
    }

    /** {@code text} without the password (given, or in a URL), on one line. */
    String clean(String text) {
        if (text == null) {
            return "";
        }
        String s = text;
        if (password != null && !password.isEmpty()) {
            s = s.replace(password, "***");
        }
        return url(s);
    }

    /** A URL, or any text, with {@code password=…} parameters and {@code user:password@} masked. */
    static String url(String text) {
        String s = URL_PASSWORD.matcher(text).replaceAll("$1***");
        return USER_INFO.matcher(s).replaceAll("$1***@");
    }

    /** The driver's message on one line, with its SQLState. */
    static String sqlMessage(SQLException e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : oneLine(e.getMessage());
        return e.getSQLState() == null ? message : message + " (SQLState " + e.getSQLState() + ")";
    }

    static String oneLine(String text) {
        return text.replaceAll("\\s*\\R\\s*", " ").strip();
    }
}
