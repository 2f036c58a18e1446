package io.retrysafe.benchmarks;

import java.util.Arrays;
import java.util.Locale;

/**
 * Two variants measured side by side in one process: after one unmeasured block each (the JIT, the plans, a
 * table's first rows; {@link #warmUp}), they take turns in {@code blocks} blocks ({@link #measure}), the order
 * alternating so that the machine's drift weighs on both alike. A block returns its costs in nanoseconds, one per
 * measure, each kept per unit of work. The report gives each measure's median and range over the blocks, and the
 * second variant over the first, per turn.
 */
final class TakingTurns {
    /** One block of a variant ({@code 0} or {@code 1}): its costs in nanoseconds, one per measure. */
    @FunctionalInterface
    interface Block {
        double[] run(int variant) throws Exception;
    }

    private final String[] variants;
    private final String[] measures;
    /** [variant][measure][block], in microseconds per unit. */
    private final double[][][] results;

    TakingTurns(String[] variants, String[] measures, int blocks) {
        if (variants.length != 2) {
            throw new IllegalArgumentException("two variants take turns, not " + variants.length);
        }
        this.variants = variants.clone();
        this.measures = measures.clone();
        this.results = new double[variants.length][measures.length][blocks];
    }

    /** One unmeasured block of each variant. */
    void warmUp(Block block) throws Exception {
        for (int v = 0; v < variants.length; v++) {
            block.run(v);
        }
    }

    /** The measured blocks; {@code units} is the work a block does (claims, calls), what each cost is divided by. */
    void measure(Block block, long units) throws Exception {
        for (int b = 0; b < results[0][0].length; b++) {
            for (int turn = 0; turn < variants.length; turn++) {
                int v = (b + turn) % variants.length;
                double[] cost = block.run(v);
                for (int m = 0; m < measures.length; m++) {
                    results[v][m][b] = cost[m] / 1e3 / units;
                }
            }
        }
    }

    /** Prints each measure: both variants' µs per {@code unit}, and the second over the first, per turn. */
    void report(String unit) {
        System.out.printf(Locale.ROOT, "µs per %s, median (min–max) over the blocks; the ratio is %s over %s, per"
                + " turn%n", unit, variants[1], variants[0]);
        for (int m = 0; m < measures.length; m++) {
            double[] ratios = new double[results[0][m].length];
            for (int b = 0; b < ratios.length; b++) {
                ratios[b] = results[1][m][b] / results[0][m][b];
            }
            System.out.printf(Locale.ROOT, "%-12s %s %s, %s %s, ratio %s%n", measures[m], variants[0],
                    summary(results[0][m]), variants[1], summary(results[1][m]), summary(ratios));
        }
    }

    /** The median and range of {@code values}, to three figures. */
    static String summary(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        double median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        return String.format(Locale.ROOT, "%.3g (%.3g–%.3g)", median, sorted[0], sorted[n - 1]);
    }
}
