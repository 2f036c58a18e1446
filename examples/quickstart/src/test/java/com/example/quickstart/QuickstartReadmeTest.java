package com.example.quickstart;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The README's quick start shows this service's files as they are: every fenced xml, yaml and java
 * snippet of its "Quick start (Spring Boot)" section is the text of (an excerpt of) the file it stands
 * for, so the README cannot drift from a service that builds and passes {@link QuickstartIT}.
 */
class QuickstartReadmeTest {
    /** From this module's directory (examples/quickstart, or a module that builds its sources). */
    private static final Path ROOT = Path.of("../..");
    private static final Path QUICKSTART = ROOT.resolve("examples/quickstart");
    private static final String SECTION = "## Quick start (Spring Boot)";
    private static final Map<String, Path> FILES = Map.of(
            "xml", QUICKSTART.resolve("pom.xml"),
            "yaml", QUICKSTART.resolve("src/main/resources/application.yml"),
            "java", QUICKSTART.resolve("src/main/java/com/example/quickstart/PaymentsController.java"));
    private static final Pattern FENCE = Pattern.compile("(?ms)^```(\\w+)\\n(.*?)^```$");

    @Test
    void everySnippetIsTheFilesText() throws IOException {
        List<String> languages = new ArrayList<>();
        Matcher snippet = FENCE.matcher(section());
        while (snippet.find()) {
            String language = snippet.group(1);
            languages.add(language);
            Path file = FILES.get(language);
            if (file != null) {
                assertThat(Files.readString(file)).as("README's %s snippet in %s", language, file)
                        .contains(snippet.group(2));
            }
        }
        assertThat(languages).as("the snippets of the quick start").contains("xml", "yaml", "java", "bash");
    }

    private static String section() throws IOException {
        String readme = Files.readString(ROOT.resolve("README.md"));
        int start = readme.indexOf(SECTION);
        assertThat(start).as("README section " + SECTION).isNotNegative();
        int end = readme.indexOf("\n## ", start + SECTION.length());
        return readme.substring(start, end < 0 ? readme.length() : end);
    }
}
