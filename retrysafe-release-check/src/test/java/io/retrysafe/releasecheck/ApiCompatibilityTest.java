package io.retrysafe.releasecheck;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public API of every published jar module against its baseline, {@code api/<module>.txt} at the root
 * of the repository (CONTRIBUTING.md, API compatibility). A difference fails the build with the lines
 * removed and added; {@code -Dretrysafe.api.accept=true} writes the baselines anew instead.
 */
class ApiCompatibilityTest {
    static final String ACCEPT = "retrysafe.api.accept";

    private static final Path REACTOR = Path.of(System.getProperty("retrysafe.reactor")).normalize();
    private static final Path BASELINES = REACTOR.resolve("api");

    @Test
    void everyPublishedModuleKeepsTheApiOfItsBaseline() throws IOException {
        boolean accept = Boolean.getBoolean(ACCEPT);
        Map<String, Path> classes = new TreeMap<>();
        for (String module : Published.JARS) {
            classes.put(module, classes(module));
        }
        Map<String, ApiSignatures.Api> apis = new TreeMap<>();
        for (var module : classes.entrySet()) {
            // The other modules' classes show what a type inherits from theirs.
            List<Path> others = classes.values().stream().filter(c -> !c.equals(module.getValue())).toList();
            apis.put(module.getKey(), ApiSignatures.read(module.getValue(), others));
        }
        StringBuilder differences = new StringBuilder();
        for (var module : apis.entrySet()) {
            Path baseline = BASELINES.resolve(module.getKey() + ".txt");
            List<String> current = module.getValue().lines();
            List<String> recorded = Files.exists(baseline) ? Files.readAllLines(baseline, StandardCharsets.UTF_8)
                    : List.of();
            String difference = ApiDiff.describe(recorded, current);
            if (!difference.isEmpty()) {
                differences.append(module.getKey()).append(" (").append(BASELINES.getParent().relativize(baseline))
                        .append("):\n").append(difference);
            }
            if (accept) {
                Files.createDirectories(BASELINES);
                Files.write(baseline, current, StandardCharsets.UTF_8);
            }
            // The count CONTRIBUTING.md's table shows; a report, not an assertion.
            System.out.printf("%s: %d public top-level types in API packages, %d in all%n", module.getKey(),
                    module.getValue().apiTypes(), module.getValue().allTypes());
        }
        List<Path> unpublished = unpublishedBaselines();
        if (accept) {
            for (Path stale : unpublished) {
                Files.delete(stale);
            }
            // What CHANGELOG.md must now name.
            System.out.println("baselines written anew; what changed (- removed, + added):\n" + differences);
            return;
        }
        assertThat(unpublished).as("baselines of modules that are not published; -D%s=true deletes them", ACCEPT)
                .isEmpty();
        assertThat(differences.toString())
                .as("The public API differs from its baseline in api/ (- removed, + added). If the change is "
                        + "intended, run this test with -D%s=true to write the baselines anew, commit them, and name "
                        + "every change in CHANGELOG.md (CONTRIBUTING.md, API compatibility)", ACCEPT)
                .isEmpty();
    }

    /**
     * The classes a module compiled: the output directory its classpath entry belongs to, since a module's jar
     * may hold more than its own classes (retrysafe-cli's shades in its dependencies, other modules' included).
     * A jar from the local repository (this module built alone) has none beside it: the module's own output in
     * the reactor is read then, where there is one.
     */
    private static Path classes(String module) {
        Pattern jar = Pattern.compile(Pattern.quote(module) + "-\\d.*\\.jar");
        List<Path> found = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(Pattern.quote(File.pathSeparator))) {
            Path path = Path.of(entry);
            Path name = path.getFileName();
            if (name != null && jar.matcher(name.toString()).matches()) {
                Path output = path.resolveSibling("classes");
                if (!Files.isDirectory(output)) {
                    output = REACTOR.resolve(module).resolve("target").resolve("classes");
                }
                found.add(Files.isDirectory(output) ? output : path);
            } else if (path.endsWith(Path.of(module, "target", "classes"))) {
                found.add(path);
            }
        }
        assertThat(found).as("%s on the test classpath; retrysafe-release-check depends on every published module",
                module).hasSize(1);
        return found.get(0);
    }

    private static List<Path> unpublishedBaselines() throws IOException {
        if (!Files.isDirectory(BASELINES)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(BASELINES)) {
            return files.filter(f -> !Published.JARS.contains(f.getFileName().toString().replaceFirst("\\.txt$", "")))
                    .sorted().toList();
        }
    }
}
