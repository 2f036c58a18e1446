package io.retrysafe.releasecheck;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * What each published module exports, and that no module of the repository (published or not, main code
 * and tests) uses a package another module does not export to it (CONTRIBUTING.md, Modules). A module with
 * a {@code module-info} exports what it declares; one without it is an automatic module named in its
 * pom, whose packages are all exported except those with an {@code internal} part, which only the module
 * itself may use.
 */
class ModuleBoundariesTest {
    private static final Path ROOT = Path.of(System.getProperty("retrysafe.reactor")).normalize();
    /** A RetrySafe type named in source: in an import, a static import or written out in full. */
    private static final Pattern TYPE = Pattern.compile("\\b(io\\.retrysafe(?:\\.[a-z][a-z0-9]*)*)\\.[A-Z]");
    private static final Pattern AUTOMATIC_NAME = Pattern.compile(
            "<automatic\\.module\\.name>([^<]*)</automatic\\.module\\.name>");
    /** Exported to no other module: a name no module can have. */
    private static final Set<String> NONE = Set.of(" ");

    /** A published module: its name, its packages, and for each package the modules it is exported to (empty: all). */
    private record Exports(String name, Map<String, Set<String>> packages) {
        boolean allows(String pkg, String reader) {
            Set<String> to = packages.get(pkg);
            return to != null && (to.isEmpty() || to.contains(reader));
        }
    }

    @Test
    void everyPublishedModuleHasAModuleNameAfterItsRootPackage() throws IOException {
        for (String module : Published.JARS) {
            Exports exports = exports(module);
            String root = exports.packages().keySet().stream().min((a, b) -> a.length() - b.length()).orElseThrow();
            assertThat(exports.name()).as("%s's module name", module).isEqualTo(root);
        }
    }

    @Test
    void noModuleUsesAPackageAnotherModuleDoesNotExportToIt() throws IOException {
        Map<String, List<Exports>> owners = new TreeMap<>();
        Map<String, String> names = new TreeMap<>();
        for (String module : Published.JARS) {
            Exports exports = exports(module);
            names.put(module, exports.name());
            exports.packages().keySet().forEach(p -> owners.computeIfAbsent(p, k -> new ArrayList<>()).add(exports));
        }
        List<String> violations = new ArrayList<>();
        for (Path module : modules()) {
            String dir = ROOT.relativize(module).toString();
            // A module that is not published reads as what it is not: none of the shared packages is exported to it.
            String reader = names.getOrDefault(dir, dir);
            Set<String> own = owners.entrySet().stream()
                    .filter(e -> e.getValue().stream().anyMatch(x -> x.name().equals(reader)))
                    .map(Map.Entry::getKey).collect(Collectors.toSet());
            for (Path source : sources(module)) {
                Matcher used = TYPE.matcher(Files.readString(source, StandardCharsets.UTF_8));
                while (used.find()) {
                    String pkg = used.group(1);
                    List<Exports> owner = owners.get(pkg);
                    if (owner == null || own.contains(pkg) || owner.stream().anyMatch(x -> x.allows(pkg, reader))) {
                        continue;
                    }
                    violations.add(ROOT.relativize(source) + " uses " + pkg + " of " + owner.get(0).name());
                }
            }
        }
        assertThat(new TreeSet<>(violations)).as("packages used where their module does not export them").isEmpty();
    }

    private static Exports exports(String module) throws IOException {
        Path classes = ROOT.resolve(module).resolve("target/classes");
        Set<String> packages;
        try (Stream<Path> files = Files.walk(classes)) {
            packages = files.filter(f -> f.toString().endsWith(".class") && !f.endsWith("module-info.class"))
                    .map(f -> classes.relativize(f.getParent()).toString().replace('/', '.'))
                    .collect(Collectors.toCollection(TreeSet::new));
        }
        Path descriptor = classes.resolve("module-info.class");
        Map<String, Set<String>> exported = new TreeMap<>();
        if (Files.exists(descriptor)) {
            ModuleDescriptor declared;
            try (InputStream in = Files.newInputStream(descriptor)) {
                declared = ModuleDescriptor.read(in);
            }
            declared.exports().forEach(e -> exported.put(e.source(), e.targets()));
            packages.stream().filter(p -> !exported.containsKey(p)).forEach(p -> exported.put(p, NONE));
            return new Exports(declared.name(), exported);
        }
        Matcher name = AUTOMATIC_NAME.matcher(Files.readString(ROOT.resolve(module).resolve("pom.xml")));
        assertThat(name.find()).as("%s has a module-info or names its automatic module in its pom", module).isTrue();
        packages.forEach(p -> exported.put(p, ("." + p + ".").contains(".internal.") ? NONE : Set.of()));
        return new Exports(name.group(1), exported);
    }

    /** Every module of the repository with Java sources: the top-level ones and the examples. */
    private static List<Path> modules() throws IOException {
        List<Path> modules = new ArrayList<>();
        for (Path parent : List.of(ROOT, ROOT.resolve("examples"))) {
            try (Stream<Path> dirs = Files.list(parent)) {
                dirs.filter(d -> Files.exists(d.resolve("pom.xml")) && Files.isDirectory(d.resolve("src")))
                        .sorted().forEach(modules::add);
            }
        }
        return modules;
    }

    private static List<Path> sources(Path module) throws IOException {
        try (Stream<Path> files = Files.walk(module.resolve("src"))) {
            return files.filter(f -> f.toString().endsWith(".java")).sorted().toList();
        }
    }
}
