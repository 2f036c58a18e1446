package io.retrysafe.cli;

/**
 * The console's pages, written as text: every value goes through {@link #text}, so a stored scope or
 * key shows as characters and never becomes markup. The pages hold no script at all.
 */
final class Html {
    private final StringBuilder out = new StringBuilder(4096);

    /** {@code value} with every character that means something in HTML (text or a quoted attribute) escaped. */
    static String text(Object value) {
        String s = String.valueOf(value);
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> b.append("&amp;");
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    /** Appends markup written here, never a value: values go through {@link #esc}. */
    Html raw(String markup) {
        out.append(markup);
        return this;
    }

    /** Appends a value, escaped. */
    Html esc(Object value) {
        out.append(text(value));
        return this;
    }

    /** {@code <tag>value</tag>}, the value escaped. */
    Html el(String tag, Object value) {
        return raw("<" + tag + ">").esc(value).raw("</" + tag.split(" ", 2)[0] + ">");
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
