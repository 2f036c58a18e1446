package io.retrysafe.benchmarks.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.text.DecimalFormatSymbols;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;

/**
 * Draws one table of benchmark results as a PNG bar chart: one group of bars per row, one bar (and
 * colour) per value column, the value written on each bar, an error whisker where a value has one.
 * Plain {@code java.awt} in headless mode; no display and no charting library needed.
 *
 * <pre>
 * java -cp retrysafe-benchmarks/target/benchmarks.jar io.retrysafe.benchmarks.report.Charts \
 *     results.csv docs/img/results.png [--title TEXT] [--x-label TEXT] [--y-label TEXT] \
 *     [--columns NAME,NAME…] [--width 1000] [--height 600]
 * </pre>
 *
 * <h2>The table</h2>
 *
 * A CSV file in UTF-8 (RFC 4180: a field with a comma or quote is quoted, {@code ""} is a quote):
 * <pre>
 * # title: POST /payments, ops/s (higher is better)
 * # x: threads
 * # y: ops/s
 * threads,bare,transactional,standalone
 * 8,557 ± 371,558 ± 671,392 ± 463
 * 1,193 ± 176,104 ± 109,169 ± 330
 * </pre>
 * <ul>
 * <li>Lines starting with {@code #} are comments; {@code # title:}, {@code # x:} and {@code # y:}
 *     set the title and axis labels (the options override them). Blank lines are skipped.
 * <li>The first other line is the header: the first column names the groups (the default x-axis
 *     label), every other column is a series, in the legend under its name.
 * <li>Each further line is one group: its label, then one value per series. A value is a decimal
 *     number, optionally followed by {@code ±} (or {@code +-}) and an error, drawn as a whisker; digit
 *     separators ({@code 1,626} when quoted, {@code 1_626}) and a unit after the number
 *     ({@code 1,626 µs}) are allowed. An empty cell, {@code -} or {@code –} is a missing bar.
 * </ul>
 * {@code --columns} draws only the named series, in that order (for a table whose columns have
 * different units, such as {@code variant,threads,throughput,p50,p99}: one chart per unit).
 *
 * <p>Exit status 0 when the PNG was written, 2 for bad arguments or a bad table (the message names the
 * line and column), 1 when a file could not be read or written.
 */
public final class Charts {
    public static final int DEFAULT_WIDTH = 1000;
    public static final int DEFAULT_HEIGHT = 600;

    /** Okabe–Ito: told apart with every common colour-vision deficiency, and in greyscale print. */
    static final Color[] PALETTE = {new Color(0x0072B2), new Color(0xE69F00), new Color(0x009E73), new Color(0xD55E00),
        new Color(0xCC79A7), new Color(0x56B4E9), new Color(0xF0E442), new Color(0x000000)};

    private static final Pattern VALUE = Pattern.compile(
            "([-+]?[0-9][0-9_,]*(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\\s*(?:(?:±|\\+-|\\+/-)\\s*([0-9][0-9_,]*(?:\\.[0-9]+)?))?\\s*([\\p{L}%][\\p{L}/%]*)?");
    private static final Pattern COMMENT_SETTING = Pattern.compile("#\\s*(title|x|y)\\s*:\\s*(.*)");

    private Charts() {
    }

    /** A bar's value and its error (0 without one); null where the table has no value. */
    record Value(double value, double error) {
    }

    /** One parsed table: group labels down, series across. */
    record Table(String title, String xLabel, String yLabel, List<String> series, List<String> groups,
            List<List<Value>> values) {
        Table {
            series = List.copyOf(series);
            groups = List.copyOf(groups);
            values = values.stream().map(row -> java.util.Collections.unmodifiableList(new ArrayList<>(row))).toList();
        }
    }

    /** How to draw: labels override the table's own, null keeps them. */
    record Options(String title, String xLabel, String yLabel, List<String> columns, int width, int height) {
        Options {
            if (width < 200 || height < 150) {
                throw new IllegalArgumentException("width and height must be at least 200 x 150, but were "
                        + width + " x " + height);
            }
            columns = columns == null ? null : List.copyOf(columns);
        }

        static Options defaults() {
            return new Options(null, null, null, null, DEFAULT_WIDTH, DEFAULT_HEIGHT);
        }
    }

    public static void main(String[] args) {
        System.setProperty("java.awt.headless", "true");
        Path in;
        Path out;
        Options options;
        Table table;
        try {
            List<String> positional = new ArrayList<>();
            Map<String, String> flags = new LinkedHashMap<>();
            for (int i = 0; i < args.length; i++) {
                if (args[i].startsWith("--")) {
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException(args[i] + " needs a value");
                    }
                    flags.put(args[i], args[++i]);
                } else {
                    positional.add(args[i]);
                }
            }
            if (positional.size() != 2) {
                throw new IllegalArgumentException("expected an input CSV and an output PNG, but got " + positional);
            }
            in = Path.of(positional.get(0));
            out = Path.of(positional.get(1));
            String columns = flags.remove("--columns");
            options = new Options(flags.remove("--title"), flags.remove("--x-label"), flags.remove("--y-label"),
                    columns == null ? null : List.of(columns.split(",")),
                    intFlag(flags.remove("--width"), DEFAULT_WIDTH), intFlag(flags.remove("--height"), DEFAULT_HEIGHT));
            if (!flags.isEmpty()) {
                throw new IllegalArgumentException("unknown options " + flags.keySet());
            }
            table = parse(Files.readString(in, StandardCharsets.UTF_8));
            write(table, options, out);
        } catch (IllegalArgumentException e) {
            System.err.println("charts: " + e.getMessage());
            System.err.println("usage: Charts TABLE.csv CHART.png [--title T] [--x-label T] [--y-label T] "
                    + "[--columns A,B] [--width W] [--height H]");
            System.exit(2);
            return;
        } catch (IOException | UncheckedIOException e) {
            System.err.println("charts: " + e.getMessage());
            System.exit(1);
            return;
        }
        System.out.println("charts: wrote " + out + " (" + table.groups().size() + " groups x "
                + (options.columns() == null ? table.series().size() : options.columns().size()) + " series)");
    }

    private static int intFlag(String value, int otherwise) {
        if (value == null) {
            return otherwise;
        }
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("expected a whole number of pixels, but was \"" + value + "\"");
        }
    }

    // ---- the table

    /** Parses the CSV described in the class comment; a bad table is an IllegalArgumentException naming the line. */
    static Table parse(String csv) {
        String title = null;
        String xLabel = null;
        String yLabel = null;
        List<String> header = null;
        List<String> groups = new ArrayList<>();
        List<List<Value>> values = new ArrayList<>();
        String[] lines = csv.replace("\uFEFF", "").split("\r?\n", -1);
        for (int n = 0; n < lines.length; n++) {
            String line = lines[n];
            int lineNo = n + 1;
            if (line.isBlank()) {
                continue;
            }
            if (line.stripLeading().startsWith("#")) {
                Matcher m = COMMENT_SETTING.matcher(line.strip());
                if (m.matches()) {
                    switch (m.group(1)) {
                        case "title" -> title = m.group(2).strip();
                        case "x" -> xLabel = m.group(2).strip();
                        default -> yLabel = m.group(2).strip();
                    }
                }
                continue;
            }
            List<String> fields = fields(line, lineNo);
            if (header == null) {
                if (fields.size() < 2) {
                    throw new IllegalArgumentException("line " + lineNo + ": the header needs a group column and at "
                            + "least one series column, but had " + fields.size() + " column(s)");
                }
                header = fields;
                continue;
            }
            if (fields.size() != header.size()) {
                throw new IllegalArgumentException("line " + lineNo + ": expected " + header.size()
                        + " columns like the header, but had " + fields.size());
            }
            groups.add(fields.get(0));
            List<Value> row = new ArrayList<>();
            for (int c = 1; c < fields.size(); c++) {
                row.add(value(fields.get(c), lineNo, header.get(c)));
            }
            values.add(row);
        }
        if (header == null || groups.isEmpty()) {
            throw new IllegalArgumentException("the table needs a header line and at least one row");
        }
        return new Table(title, xLabel == null ? header.get(0) : xLabel, yLabel, header.subList(1, header.size()),
                groups, values);
    }

    private static Value value(String cell, int lineNo, String column) {
        String s = cell.strip();
        if (s.isEmpty() || s.equals("-") || s.equals("–") || s.equals("—")) {
            return null;
        }
        Matcher m = VALUE.matcher(s);
        if (!m.matches()) {
            throw new IllegalArgumentException("line " + lineNo + ", column \"" + column
                    + "\": expected a number such as 557 or 557 ± 371, but was \"" + cell + "\"");
        }
        double value = new BigDecimal(m.group(1).replace("_", "").replace(",", "")).doubleValue();
        double error = m.group(2) == null ? 0 : new BigDecimal(m.group(2).replace("_", "").replace(",", "")).doubleValue();
        if (!Double.isFinite(value) || !Double.isFinite(error)) {
            throw new IllegalArgumentException("line " + lineNo + ", column \"" + column
                    + "\": expected a finite number, but was \"" + cell + "\"");
        }
        return new Value(value, error);
    }

    /** RFC 4180 fields of one line. */
    private static List<String> fields(String line, int lineNo) {
        List<String> fields = new ArrayList<>();
        StringBuilder field = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quoted) {
                if (c == '"' && i + 1 < line.length() && line.charAt(i + 1) == '"') {
                    field.append('"');
                    i++;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    field.append(c);
                }
            } else if (c == '"' && field.toString().isBlank()) {
                field.setLength(0);
                quoted = true;
            } else if (c == ',') {
                fields.add(field.toString().strip());
                field.setLength(0);
            } else {
                field.append(c);
            }
        }
        if (quoted) {
            throw new IllegalArgumentException("line " + lineNo + ": a quoted field has no closing quote");
        }
        fields.add(field.toString().strip());
        return fields;
    }

    // ---- the chart

    /** Renders the table and writes it as a PNG. */
    static void write(Table table, Options options, Path png) throws IOException {
        BufferedImage image = render(table, options);
        Path parent = png.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        if (!ImageIO.write(image, "png", png.toFile())) {
            throw new IOException("no PNG writer in this Java runtime");
        }
    }

    static BufferedImage render(Table table, Options options) {
        List<Integer> columns = selectedColumns(table, options.columns());
        String title = options.title() != null ? options.title() : table.title();
        String xLabel = options.xLabel() != null ? options.xLabel() : table.xLabel();
        String yLabel = options.yLabel() != null ? options.yLabel() : table.yLabel();
        int width = options.width();
        int height = options.height();

        BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, width, height);
            Font base = new Font(Font.SANS_SERIF, Font.PLAIN, Math.max(11, height / 50));
            Font titleFont = base.deriveFont(Font.BOLD, base.getSize2D() * 1.4f);
            Font small = base.deriveFont(base.getSize2D() * 0.9f);

            int top = 12;
            if (title != null && !title.isBlank()) {
                g.setFont(titleFont);
                g.setColor(Color.BLACK);
                FontMetrics fm = g.getFontMetrics();
                g.drawString(title, (width - fm.stringWidth(title)) / 2, top + fm.getAscent());
                top += fm.getHeight() + 6;
            }
            top = legend(g, table, columns, small, width, top) + 10;

            g.setFont(base);
            FontMetrics fm = g.getFontMetrics();
            double[] range = range(table, columns);
            double[] ticks = ticks(range[0], range[1]);
            double lo = ticks[0];
            double hi = ticks[ticks.length - 1];
            int tickWidth = 0;
            for (double t : ticks) {
                tickWidth = Math.max(tickWidth, fm.stringWidth(format(t)));
            }
            int left = 16 + (yLabel == null ? 0 : fm.getHeight() + 6) + tickWidth + 8;
            int right = width - 20;
            int bottom = height - 16 - (xLabel == null ? 0 : fm.getHeight() + 6) - fm.getHeight() - 8;
            int plotHeight = Math.max(10, bottom - top);

            // Grid and y ticks.
            g.setFont(base);
            for (double t : ticks) {
                int y = y(t, lo, hi, top, plotHeight);
                g.setColor(new Color(0xE0E0E0));
                g.drawLine(left, y, right, y);
                g.setColor(Color.DARK_GRAY);
                String label = format(t);
                g.drawString(label, left - 8 - fm.stringWidth(label), y + fm.getAscent() / 2 - 1);
            }

            // Bars.
            int groups = table.groups().size();
            double groupWidth = (right - left) / (double) groups;
            double barWidth = groupWidth * 0.8 / columns.size();
            int zero = y(Math.max(lo, Math.min(hi, 0)), lo, hi, top, plotHeight);
            g.setFont(small);
            FontMetrics sm = g.getFontMetrics();
            for (int gi = 0; gi < groups; gi++) {
                double groupLeft = left + gi * groupWidth + groupWidth * 0.1;
                for (int si = 0; si < columns.size(); si++) {
                    Value v = table.values().get(gi).get(columns.get(si));
                    if (v == null) {
                        continue;
                    }
                    int x0 = (int) Math.round(groupLeft + si * barWidth);
                    int x1 = (int) Math.round(groupLeft + (si + 1) * barWidth) - 2;
                    int yv = y(v.value(), lo, hi, top, plotHeight);
                    g.setColor(PALETTE[si % PALETTE.length]);
                    g.fillRect(x0, Math.min(yv, zero), Math.max(1, x1 - x0), Math.max(1, Math.abs(zero - yv)));
                    int cx = (x0 + x1) / 2;
                    int labelY = Math.min(yv, zero) - 4;
                    if (v.error() > 0) {
                        int ye0 = y(v.value() - v.error(), lo, hi, top, plotHeight);
                        int ye1 = y(v.value() + v.error(), lo, hi, top, plotHeight);
                        g.setColor(Color.BLACK);
                        g.setStroke(new BasicStroke(1.2f));
                        int cap = Math.max(2, (x1 - x0) / 6);
                        g.drawLine(cx, ye0, cx, ye1);
                        g.drawLine(cx - cap, ye0, cx + cap, ye0);
                        g.drawLine(cx - cap, ye1, cx + cap, ye1);
                        labelY = Math.min(labelY, Math.min(ye0, ye1) - 4);
                    }
                    String label = format(v.value());
                    g.setColor(Color.BLACK);
                    g.drawString(label, cx - sm.stringWidth(label) / 2, Math.max(top + sm.getAscent(), labelY));
                }
            }

            // Axes.
            g.setColor(Color.BLACK);
            g.setStroke(new BasicStroke(1f));
            g.drawLine(left, top, left, top + plotHeight);
            g.drawLine(left, zero, right, zero);

            // Group labels, x label, y label.
            g.setFont(base);
            for (int gi = 0; gi < groups; gi++) {
                String label = fit(table.groups().get(gi), fm, (int) groupWidth - 4);
                int cx = (int) Math.round(left + (gi + 0.5) * groupWidth);
                g.drawString(label, cx - fm.stringWidth(label) / 2, top + plotHeight + 6 + fm.getAscent());
            }
            if (xLabel != null) {
                g.drawString(xLabel, left + (right - left - fm.stringWidth(xLabel)) / 2, height - 16);
            }
            if (yLabel != null) {
                AffineTransform saved = g.getTransform();
                g.rotate(-Math.PI / 2);
                g.drawString(yLabel, -(top + (plotHeight + fm.stringWidth(yLabel)) / 2), 16 + fm.getAscent());
                g.setTransform(saved);
            }
        } finally {
            g.dispose();
        }
        return image;
    }

    private static List<Integer> selectedColumns(Table table, List<String> names) {
        List<Integer> columns = new ArrayList<>();
        if (names == null) {
            for (int i = 0; i < table.series().size(); i++) {
                columns.add(i);
            }
            return columns;
        }
        for (String name : names) {
            int i = table.series().indexOf(name.strip());
            if (i < 0) {
                throw new IllegalArgumentException("--columns names \"" + name + "\", but the table's series are "
                        + table.series());
            }
            columns.add(i);
        }
        return columns;
    }

    /** One swatch and name per series, centred, wrapped onto further lines if needed; returns the y below it. */
    private static int legend(Graphics2D g, Table table, List<Integer> columns, Font font, int width, int top) {
        g.setFont(font);
        FontMetrics fm = g.getFontMetrics();
        int swatch = fm.getAscent();
        List<List<Integer>> lines = new ArrayList<>();
        List<Integer> line = new ArrayList<>();
        int lineWidth = 0;
        for (int si = 0; si < columns.size(); si++) {
            int w = swatch + 6 + fm.stringWidth(table.series().get(columns.get(si))) + 18;
            if (!line.isEmpty() && lineWidth + w > width - 40) {
                lines.add(line);
                line = new ArrayList<>();
                lineWidth = 0;
            }
            line.add(si);
            lineWidth += w;
        }
        lines.add(line);
        int y = top;
        for (List<Integer> l : lines) {
            int total = 0;
            for (int si : l) {
                total += swatch + 6 + fm.stringWidth(table.series().get(columns.get(si))) + 18;
            }
            int x = (width - total) / 2;
            for (int si : l) {
                String name = table.series().get(columns.get(si));
                g.setColor(PALETTE[si % PALETTE.length]);
                g.fillRect(x, y, swatch, swatch);
                g.setColor(Color.BLACK);
                g.drawString(name, x + swatch + 6, y + fm.getAscent() - 1);
                x += swatch + 6 + fm.stringWidth(name) + 18;
            }
            y += fm.getHeight() + 2;
        }
        return y;
    }

    /** The values' span, bars drawn from zero, whiskers included. */
    private static double[] range(Table table, List<Integer> columns) {
        double min = 0;
        double max = 0;
        for (List<Value> row : table.values()) {
            for (int c : columns) {
                Value v = row.get(c);
                if (v != null) {
                    min = Math.min(min, v.value() - v.error());
                    max = Math.max(max, v.value() + v.error());
                }
            }
        }
        if (min == max) {
            max = min + 1;
        }
        return new double[] {min, max + (max - min) * 0.08}; // headroom for the labels on the tallest bars
    }

    /** Round ticks (1, 2 or 5 times a power of ten) covering [lo, hi], about six of them. */
    static double[] ticks(double lo, double hi) {
        double raw = (hi - lo) / 6;
        double power = Math.pow(10, Math.floor(Math.log10(raw)));
        double step = power * (raw / power <= 1 ? 1 : raw / power <= 2 ? 2 : raw / power <= 5 ? 5 : 10);
        double first = Math.floor(lo / step) * step;
        double last = Math.ceil(hi / step) * step;
        int n = (int) Math.round((last - first) / step) + 1;
        double[] ticks = new double[n];
        for (int i = 0; i < n; i++) {
            ticks[i] = first + i * step;
        }
        return ticks;
    }

    private static int y(double value, double lo, double hi, int top, int plotHeight) {
        return (int) Math.round(top + plotHeight - (value - lo) / (hi - lo) * plotHeight);
    }

    /** Up to three significant decimals, thousands grouped: 557, 1,626, 0.93, 12.5. */
    static String format(double v) {
        DecimalFormat f = new DecimalFormat(Math.abs(v) >= 100 || v == Math.rint(v) ? "#,##0" : "#,##0.0##",
                DecimalFormatSymbols.getInstance(Locale.ROOT));
        return f.format(v);
    }

    private static String fit(String text, FontMetrics fm, int width) {
        if (fm.stringWidth(text) <= width) {
            return text;
        }
        String cut = text;
        while (cut.length() > 1 && fm.stringWidth(cut + "…") > width) {
            cut = cut.substring(0, cut.length() - 1);
        }
        return cut + "…";
    }
}
