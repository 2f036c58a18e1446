package io.retrysafe.releasecheck;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * The release build as CONTRIBUTING.md runs it ({@code ./mvnw -Prelease deploy} into a staging
 * directory), without tests, and what it wrote: every published module's pom, jar, sources
 * and javadoc, with the metadata Maven Central asks for, and nothing of the modules that are not
 * published. Internal modules are in the build too ({@code -Pfaults} adds the last one), so that each is
 * seen skipping its deployment.
 */
class ReleaseStagingIT {
    private static final String GROUP = "io/retrysafe";
    /** The POMs that carry Central's metadata themselves; every other module inherits it from the first. */
    private static final Set<String> METADATA_POMS = Set.of("retrysafe-parent", "retrysafe-bom");
    /** The Boot 3.5 line's modules get Boot 3.5's dependency management from a parent of their own. */
    private static final String BOOT3_PARENT = "retrysafe-spring-boot3-parent";
    private static final Duration BUILD_BOUND = Duration.ofMinutes(20);

    private static final Path REACTOR = Path.of(System.getProperty("retrysafe.reactor")).normalize();
    private static final String VERSION = System.getProperty("retrysafe.version");

    @TempDir
    static Path work;
    private static Path staging;

    @BeforeAll
    static void deployToStaging() throws Exception {
        staging = work.resolve("staging");
        Path log = work.resolve("release-build.log");
        // In place, after the rest of the reactor: what is compiled stays compiled. No tests (nor the payments
        // example's AOT processing, which only its tests use); every jar made anew, not taken from an older build.
        List<String> command = List.of(REACTOR.resolve("mvnw").toString(), "-B", "-q", "-Prelease,faults",
                "deploy", "-DskipTests", "-Dmaven.test.skip=true", "-Dmaven.jar.forceCreation=true",
                "-DaltDeploymentRepository=staging::file:" + staging.toUri().getPath());
        long started = System.nanoTime();
        Process build = new ProcessBuilder(command).directory(REACTOR.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        if (!build.waitFor(BUILD_BOUND.toMinutes(), TimeUnit.MINUTES)) {
            build.destroyForcibly();
            throw new AssertionError("the release build ran over " + BUILD_BOUND + ":\n" + Files.readString(log));
        }
        assertThat(build.exitValue()).as("%s:%n%s", command, Files.readString(log)).isZero();
        // What this check adds to the build (CONTRIBUTING.md, Releases); a report, not an assertion.
        System.out.println("release build into the staging directory: "
                + Duration.ofNanos(System.nanoTime() - started).toSeconds() + " s");
    }

    @Test
    void exactlyThePublishedModulesAreDeployed() throws IOException {
        Set<String> expected = new TreeSet<>(Published.JARS);
        expected.addAll(Published.POMS);
        try (Stream<Path> dirs = Files.list(staging.resolve(GROUP))) {
            assertThat(dirs.map(d -> d.getFileName().toString())).containsExactlyInAnyOrderElementsOf(expected);
        }
    }

    @Test
    void everyPublishedJarModuleHasItsPomJarSourcesAndJavadoc() throws Exception {
        for (String module : Published.JARS) {
            assertThat(artifacts(module)).as(module).containsExactlyInAnyOrder(".pom", ".jar", "-sources.jar",
                    "-javadoc.jar");
            assertThat(entries(artifact(module, ".jar"))).as(module).anyMatch(e -> e.endsWith(".class"));
            assertThat(entries(artifact(module, "-sources.jar"))).as(module).anyMatch(e -> e.endsWith(".java"));
            assertThat(entries(artifact(module, "-javadoc.jar"))).as(module).contains("index.html");
            Element pom = pom(module);
            assertThat(text(pom, "name")).as(module).isNotBlank();
            assertThat(text(pom, "description")).as(module).isNotBlank();
            assertThat(text(child(pom, "parent"), "artifactId")).as(module)
                    .isEqualTo(module.startsWith("retrysafe-spring-boot3-") ? BOOT3_PARENT : "retrysafe-parent");
        }
        for (String module : Published.POMS) {
            assertThat(artifacts(module)).as(module).containsExactly(".pom");
        }
    }

    /** The metadata Maven Central requires; modules inherit it from the parent, the BOM (no parent) has its own. */
    @Test
    void theParentAndTheBomCarryTheMetadataCentralRequires() throws Exception {
        for (String module : METADATA_POMS) {
            Element pom = pom(module);
            assertThat(text(pom, "name")).as(module).isNotBlank();
            assertThat(text(pom, "description")).as(module).isNotBlank();
            assertThat(text(pom, "url")).as(module).startsWith("https://");
            assertThat(text(child(child(pom, "licenses"), "license"), "name")).as(module)
                    .isEqualTo("Apache License, Version 2.0");
            assertThat(text(child(pom, "scm"), "url")).as(module).startsWith("https://");
            assertThat(text(child(pom, "scm"), "connection")).as(module).startsWith("scm:git:");
            assertThat(text(child(child(pom, "developers"), "developer"), "name")).as(module).isNotBlank();
        }
    }

    @Test
    void theBomListsEveryPublishedJarModuleAndNothingElse() throws Exception {
        NodeList dependencies = child(child(pom("retrysafe-bom"), "dependencyManagement"), "dependencies")
                .getElementsByTagName("artifactId");
        List<String> listed = new ArrayList<>();
        for (int i = 0; i < dependencies.getLength(); i++) {
            listed.add(dependencies.item(i).getTextContent().strip());
        }
        assertThat(listed).containsExactlyInAnyOrderElementsOf(Published.JARS);
    }

    /**
     * Two builds of the same commit give the same bytes: every entry the build writes carries
     * project.build.outputTimestamp. (Entries a module shades in from a dependency, as the CLI does with
     * picocli, keep the dependency's own fixed times.)
     */
    @Test
    void everyEntryTheBuildWritesCarriesTheFixedTimestamp() throws Exception {
        // Zip keeps a local date-time with no zone; the archiver writes the timestamp's UTC fields.
        LocalDateTime fixed = LocalDateTime.ofInstant(Instant.parse(System.getProperty("retrysafe.outputTimestamp")),
                ZoneOffset.UTC);
        for (String module : Published.JARS) {
            for (String kind : List.of(".jar", "-sources.jar", "-javadoc.jar")) {
                try (ZipFile zip = new ZipFile(artifact(module, kind).toFile())) {
                    List<ZipEntry> written = zip.stream().filter(e -> kind.equals("-javadoc.jar")
                            || e.getName().startsWith("io/retrysafe/") || e.getName().equals("META-INF/MANIFEST.MF"))
                            .collect(Collectors.toList());
                    assertThat(written).as("%s%s", module, kind).isNotEmpty();
                    for (ZipEntry entry : written) {
                        assertThat(entry.getTimeLocal()).as("%s%s %s", module, kind, entry.getName()).isEqualTo(fixed);
                    }
                }
            }
        }
    }

    /** The kinds of file deployed for a module, by what follows its version: ".pom", "-sources.jar", … */
    private static Set<String> artifacts(String module) throws IOException {
        Pattern name = Pattern.compile(Pattern.quote(module) + "-" + versionPattern() + "(.*)");
        try (Stream<Path> files = Files.list(versionDir(module))) {
            return files.map(f -> f.getFileName().toString())
                    .filter(f -> !f.startsWith("maven-metadata") && !f.matches(".*\\.(md5|sha1|sha256|sha512)$"))
                    .map(f -> {
                        var m = name.matcher(f);
                        assertThat(m.matches()).as("deployed file %s of %s", f, module).isTrue();
                        return m.group(1);
                    })
                    .collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static Path artifact(String module, String kind) throws IOException {
        Pattern name = Pattern.compile(Pattern.quote(module) + "-" + versionPattern() + Pattern.quote(kind));
        try (Stream<Path> files = Files.list(versionDir(module))) {
            return files.filter(f -> name.matcher(f.getFileName().toString()).matches()).findFirst()
                    .orElseThrow(() -> new AssertionError("no " + kind + " of " + module));
        }
    }

    /** A snapshot is deployed as 0.1.0-20261201.093000-1, a release as 0.1.0. */
    private static String versionPattern() {
        return VERSION.endsWith("-SNAPSHOT")
                ? Pattern.quote(VERSION.substring(0, VERSION.length() - "-SNAPSHOT".length())) + "-\\d{8}\\.\\d{6}-\\d+"
                : Pattern.quote(VERSION);
    }

    private static Path versionDir(String module) {
        return staging.resolve(GROUP).resolve(module).resolve(VERSION);
    }

    private static Set<String> entries(Path jar) throws IOException {
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            return zip.stream().map(ZipEntry::getName).collect(Collectors.toSet());
        }
    }

    private static Element pom(String module) throws Exception {
        try (InputStream in = Files.newInputStream(artifact(module, ".pom"))) {
            Document document = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(in);
            return document.getDocumentElement();
        }
    }

    private static Element child(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        throw new AssertionError("no <" + name + "> in <" + parent.getTagName() + ">");
    }

    private static String text(Element parent, String name) {
        return child(parent, name).getTextContent().strip();
    }
}
