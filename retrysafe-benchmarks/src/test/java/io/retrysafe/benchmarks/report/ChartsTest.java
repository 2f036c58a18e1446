package io.retrysafe.benchmarks.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.retrysafe.benchmarks.report.Charts.Options;
import io.retrysafe.benchmarks.report.Charts.Table;
import io.retrysafe.benchmarks.report.Charts.Value;
import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChartsTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void headless() {
        System.setProperty("java.awt.headless", "true");
    }

    private static String sample() throws IOException {
        try (InputStream in = ChartsTest.class.getResourceAsStream("sample.csv")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void parsesTheSampleTable() throws IOException {
        Table table = Charts.parse(sample());

        assertThat(table.title()).isEqualTo("POST /payments, ops/s (higher is better)");
        assertThat(table.xLabel()).as("the group column's name").isEqualTo("threads");
        assertThat(table.yLabel()).isEqualTo("ops/s");
        assertThat(table.series()).containsExactly("bare", "transactional", "standalone");
        assertThat(table.groups()).containsExactly("8", "1", "16, pooled");
        assertThat(table.values().get(0)).containsExactly(new Value(557, 371), new Value(558, 67), new Value(392, 0));
        assertThat(table.values().get(1)).containsExactly(new Value(193, 0), new Value(1040, 0), null);
        assertThat(table.values().get(2).get(0)).isEqualTo(new Value(900, 10));
    }

    /** The PNG a user opens: a valid image of the size asked for, with each series' bars in its colour, tallest most. */
    @Test
    void writesAPngOfTheRequestedSizeWithABarPerValue() throws IOException {
        Path csv = Files.writeString(dir.resolve("sample.csv"), sample());
        Path png = dir.resolve("img/sample.png");

        Charts.write(Charts.parse(Files.readString(csv)), new Options(null, null, null, null, 900, 500), png);

        byte[] bytes = Files.readAllBytes(png);
        assertThat(Arrays.copyOf(bytes, 8)).as("PNG signature")
                .containsExactly(0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A);
        BufferedImage image = ImageIO.read(png.toFile());
        assertThat(image).isNotNull();
        assertThat(image.getWidth()).isEqualTo(900);
        assertThat(image.getHeight()).isEqualTo(500);
        long bare = pixels(image, Charts.PALETTE[0]);
        long transactional = pixels(image, Charts.PALETTE[1]);
        long standalone = pixels(image, Charts.PALETTE[2]);
        assertThat(bare).isPositive();
        assertThat(standalone).isPositive();
        // Bar areas follow the values: transactional 558 + 1,040 + 450 > bare 557 + 193 + 900 > standalone 392 + 300.
        assertThat(transactional).isGreaterThan(bare);
        assertThat(bare).isGreaterThan(standalone);
        assertThat(pixels(image, Color.BLACK)).as("text, axes and whiskers").isPositive();
    }

    @Test
    void columnsSelectsSeriesAndTheirOrder() throws IOException {
        Table table = Charts.parse(sample());

        BufferedImage image = Charts.render(table,
                new Options("only two", null, null, List.of("standalone", "bare"), 640, 400));

        assertThat(image.getWidth()).isEqualTo(640);
        assertThat(pixels(image, Charts.PALETTE[0])).as("standalone, first colour").isPositive();
        assertThat(pixels(image, Charts.PALETTE[1])).as("bare, second colour").isPositive();
        assertThat(pixels(image, Charts.PALETTE[2])).as("no third series").isZero();
        assertThatThrownBy(() -> Charts.render(table, new Options(null, null, null, List.of("p99"), 640, 400)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--columns names \"p99\", but the table's series are [bare, transactional, standalone]");
    }

    @Test
    void aBadTableNamesTheLineAndColumn() {
        assertThatThrownBy(() -> Charts.parse("v,a,b\nx,1,oops\n")).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("line 2, column \"b\": expected a number such as 557 or 557 ± 371, but was \"oops\"");
        assertThatThrownBy(() -> Charts.parse("v,a,b\nx,413 / 383,1\n")).as("a second number is not a unit")
                .hasMessageStartingWith("line 2, column \"a\"");
        assertThatThrownBy(() -> Charts.parse("# only a comment\nv,a\n"))
                .hasMessage("the table needs a header line and at least one row");
        assertThatThrownBy(() -> Charts.parse("v,a\nx,1,2\n")).hasMessage("line 2: expected 2 columns like the header, but had 3");
        assertThatThrownBy(() -> Charts.parse("v,a\n\"x,1\n")).hasMessage("line 2: a quoted field has no closing quote");
        assertThatThrownBy(() -> new Options(null, null, null, null, 10, 10)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void ticksAreRoundAndCoverTheRange() {
        assertThat(Charts.ticks(0, 1123)).containsExactly(0, 200, 400, 600, 800, 1000, 1200);
        assertThat(Charts.ticks(0, 0.93)).startsWith(0.0).endsWith(1.0);
        assertThat(Charts.format(1626)).isEqualTo("1,626");
        assertThat(Charts.format(0.93)).isEqualTo("0.93");
        assertThat(Charts.format(12.5)).isEqualTo("12.5");
    }

    private static long pixels(BufferedImage image, Color color) {
        long n = 0;
        int rgb = color.getRGB() & 0xFFFFFF;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                if ((image.getRGB(x, y) & 0xFFFFFF) == rgb) {
                    n++;
                }
            }
        }
        return n;
    }
}
