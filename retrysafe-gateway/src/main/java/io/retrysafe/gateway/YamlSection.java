package io.retrysafe.gateway;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.snakeyaml.engine.v2.exceptions.Mark;
import org.snakeyaml.engine.v2.nodes.MappingNode;
import org.snakeyaml.engine.v2.nodes.Node;
import org.snakeyaml.engine.v2.nodes.NodeTuple;
import org.snakeyaml.engine.v2.nodes.ScalarNode;
import org.snakeyaml.engine.v2.nodes.SequenceNode;

/**
 * One YAML mapping of the configuration, read key by key with the place of each value, so that every refusal
 * names its line and column. {@link #done()} refuses keys nobody read: a misspelt key is an error, not a default.
 */
final class YamlSection {
    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    private final String file;
    private final String path;
    private final Node node;
    private final Map<String, NodeTuple> entries = new LinkedHashMap<>();
    private final Set<String> read = new LinkedHashSet<>();

    YamlSection(String file, String path, Node node) {
        this.file = file;
        this.path = path;
        this.node = node;
        if (!(node instanceof MappingNode mapping)) {
            throw error(node, (path.isEmpty() ? "the configuration" : path) + " must be a mapping of keys to values");
        }
        for (NodeTuple t : mapping.getValue()) {
            if (!(t.getKeyNode() instanceof ScalarNode key)) {
                throw error(t.getKeyNode(), "a key must be a plain name");
            }
            if (entries.put(key.getValue(), t) != null) {
                throw error(key, "key " + qualified(key.getValue()) + " is given twice");
            }
        }
    }

    String path() {
        return path;
    }

    boolean has(String key) {
        return entries.containsKey(key);
    }

    ConfigException error(String key, String reason) {
        NodeTuple t = entries.get(key);
        return error(t == null ? node : t.getValueNode(), reason);
    }

    ConfigException error(Node at, String reason) {
        Mark mark = at.getStartMark().orElse(null);
        return new ConfigException(file, mark == null ? 0 : mark.getLine() + 1, mark == null ? 0 : mark.getColumn() + 1,
                reason);
    }

    String qualified(String key) {
        return path.isEmpty() ? key : path + "." + key;
    }

    private Node value(String key) {
        read.add(key);
        NodeTuple t = entries.get(key);
        return t == null ? null : t.getValueNode();
    }

    String string(String key, String defaultValue) {
        Node v = value(key);
        if (v == null) {
            return defaultValue;
        }
        if (!(v instanceof ScalarNode s)) {
            throw error(v, qualified(key) + " must be a single value");
        }
        if (s.getValue().isBlank()) {
            throw error(v, qualified(key) + " must not be empty");
        }
        return s.getValue();
    }

    String requiredString(String key) {
        String s = string(key, null);
        if (s == null) {
            throw error(node, qualified(key) + " is required");
        }
        return s;
    }

    int integer(String key, int defaultValue, int min, int max) {
        String s = string(key, null);
        if (s == null) {
            return defaultValue;
        }
        long v;
        try {
            v = Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw error(key, qualified(key) + " must be a whole number, but was \"" + s + "\"");
        }
        if (v < min || v > max) {
            throw error(key, qualified(key) + " must be between " + min + " and " + max + ", but was " + v);
        }
        return (int) v;
    }

    boolean bool(String key, boolean defaultValue) {
        String s = string(key, null);
        if (s == null) {
            return defaultValue;
        }
        return switch (s) {
            case "true" -> true;
            case "false" -> false;
            default -> throw error(key, qualified(key) + " must be true or false, but was \"" + s + "\"");
        };
    }

    /** {@code 500ms}, {@code 30s}, {@code 5m}, {@code 24h}, {@code 7d}, or ISO-8601 ({@code PT30S}); positive. */
    Duration duration(String key, Duration defaultValue) {
        Duration d = durationOrZero(key, defaultValue);
        if (d.isZero()) {
            throw error(key, qualified(key) + " must be positive, but was " + string(key, null));
        }
        return d;
    }

    /** As {@link #duration}, where zero is allowed. */
    Duration durationOrZero(String key, Duration defaultValue) {
        String s = string(key, null);
        if (s == null) {
            return defaultValue;
        }
        Duration d;
        Matcher m = DURATION.matcher(s.trim());
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            d = switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        } else {
            try {
                d = Duration.parse(s.trim().toUpperCase(Locale.ROOT));
            } catch (DateTimeParseException e) {
                throw error(key, qualified(key) + " must be a duration such as 500ms, 30s, 5m, 24h, 7d or PT30S, but was \""
                        + s + "\"");
            }
        }
        if (d.isNegative()) {
            throw error(key, qualified(key) + " must not be negative, but was " + s);
        }
        return d;
    }

    /** A list of single values; a single value alone is not a list. */
    List<String> strings(String key, List<String> defaultValue) {
        Node v = value(key);
        if (v == null) {
            return defaultValue;
        }
        if (!(v instanceof SequenceNode seq)) {
            throw error(v, qualified(key) + " must be a list");
        }
        List<String> out = new ArrayList<>();
        for (Node item : seq.getValue()) {
            if (!(item instanceof ScalarNode s) || s.getValue().isBlank()) {
                throw error(item, "each item of " + qualified(key) + " must be a single, non-empty value");
            }
            out.add(s.getValue());
        }
        return List.copyOf(out);
    }

    YamlSection section(String key) {
        Node v = value(key);
        return v == null ? null : new YamlSection(file, qualified(key), v);
    }

    List<YamlSection> sections(String key) {
        Node v = value(key);
        if (v == null) {
            return List.of();
        }
        if (!(v instanceof SequenceNode seq)) {
            throw error(v, qualified(key) + " must be a list");
        }
        List<YamlSection> out = new ArrayList<>();
        for (int i = 0; i < seq.getValue().size(); i++) {
            out.add(new YamlSection(file, qualified(key) + "[" + i + "]", seq.getValue().get(i)));
        }
        return out;
    }

    /** Refuses the keys of this mapping nobody asked for. */
    void done() {
        for (Map.Entry<String, NodeTuple> e : entries.entrySet()) {
            if (!read.contains(e.getKey())) {
                throw error(e.getValue().getKeyNode(), "unknown key " + qualified(e.getKey()) + " (known here: "
                        + String.join(", ", read) + ")");
            }
        }
    }
}
