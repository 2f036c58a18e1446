package io.retrysafe.examples.paymentsservice.provider;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The members of the flat JSON objects the provider and its client exchange: strings and whole numbers. */
public final class FlatJson {
    private static final Pattern MEMBER = Pattern.compile("\"([A-Za-z_]+)\"\\s*:\\s*(\"([^\"\\\\]*)\"|-?[0-9]+)");

    private FlatJson() {
    }

    /** The first member {@code name} of {@code json}: a string's text or a number's digits; null when absent. */
    public static String member(String json, String name) {
        Matcher m = MEMBER.matcher(json);
        while (m.find()) {
            if (m.group(1).equals(name)) {
                return m.group(3) != null ? m.group(3) : m.group(2);
            }
        }
        return null;
    }
}
