package io.retrysafe.releasecheck;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/** The lines of an API that a baseline lacks, or has and the API no longer does. */
final class ApiDiff {
    private ApiDiff() {
    }

    /**
     * Each line removed ({@code - }) and added ({@code + }), one per text line, grouped by the type they
     * belong to so that a changed member reads as its old line above its new one; empty when both agree.
     */
    static String describe(List<String> baseline, List<String> current) {
        Set<String> before = new HashSet<>(baseline);
        Set<String> after = new HashSet<>(current);
        Map<String, List<String>> byType = new TreeMap<>();
        for (String line : baseline) {
            if (!after.contains(line)) {
                byType.computeIfAbsent(type(line), t -> new ArrayList<>()).add("- " + line);
            }
        }
        for (String line : current) {
            if (!before.contains(line)) {
                byType.computeIfAbsent(type(line), t -> new ArrayList<>()).add("+ " + line);
            }
        }
        StringBuilder text = new StringBuilder();
        byType.values().forEach(lines -> lines.forEach(l -> text.append(l).append('\n')));
        return text.toString();
    }

    private static String type(String line) {
        int end = line.indexOf(": ");
        return end < 0 ? line : line.substring(0, end);
    }
}
