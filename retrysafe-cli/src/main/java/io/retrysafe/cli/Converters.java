package io.retrysafe.cli;

import io.retrysafe.jdbc.JdbcDialect;
import io.retrysafe.jdbc.JdbcLayout;
import io.retrysafe.spi.RecordStatus;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Option values as operators type them: {@code 5m}, {@code in_progress}, {@code mariadb}. */
final class Converters {
    private static final Pattern PART = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    private Converters() {
    }

    /** {@code 30s}, {@code 5m}, {@code 2h}, {@code 7d}, {@code 500ms}, combined ({@code 1h30m}), or ISO-8601 ({@code PT5M}). */
    static final class DurationConverter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            String s = value.strip().toLowerCase(Locale.ROOT);
            if (s.startsWith("p")) {
                try {
                    return Duration.parse(s.toUpperCase(Locale.ROOT));
                } catch (DateTimeParseException e) {
                    throw invalid(value);
                }
            }
            Matcher m = PART.matcher(s);
            Duration total = Duration.ZERO;
            int end = 0;
            while (m.find() && m.start() == end) {
                long n;
                try {
                    n = Long.parseLong(m.group(1));
                    total = total.plus(switch (m.group(2)) {
                        case "ms" -> Duration.ofMillis(n);
                        case "s" -> Duration.ofSeconds(n);
                        case "m" -> Duration.ofMinutes(n);
                        case "h" -> Duration.ofHours(n);
                        default -> Duration.ofDays(n);
                    });
                } catch (NumberFormatException | ArithmeticException e) {
                    throw invalid(value);
                }
                end = m.end();
            }
            if (end == 0 || end != s.length()) {
                throw invalid(value);
            }
            return total;
        }

        private static TypeConversionException invalid(String value) {
            return new TypeConversionException(
                    "expected a duration such as 30s, 5m, 2h, 7d, 1h30m or PT5M, but was \"" + value + "\"");
        }
    }

    /** {@code IN_PROGRESS}, {@code in_progress} or {@code in-progress}. */
    static final class StatusConverter implements ITypeConverter<RecordStatus> {
        @Override
        public RecordStatus convert(String value) {
            try {
                return RecordStatus.valueOf(value.strip().toUpperCase(Locale.ROOT).replace('-', '_'));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(
                        "expected IN_PROGRESS, COMPLETED or FAILED, but was \"" + value + "\"");
            }
        }
    }

    /** {@code postgresql} or {@code mariadb}, any case. */
    static final class DialectConverter implements ITypeConverter<JdbcDialect> {
        @Override
        public JdbcDialect convert(String value) {
            try {
                return JdbcDialect.valueOf(value.strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException("expected postgresql or mariadb, but was \"" + value + "\"");
            }
        }
    }

    /** {@code standard} or {@code partitioned} (the table partitioned by expiry day), any case. */
    static final class LayoutConverter implements ITypeConverter<JdbcLayout> {
        @Override
        public JdbcLayout convert(String value) {
            return switch (value.strip().toLowerCase(Locale.ROOT)) {
                case "standard" -> JdbcLayout.STANDARD;
                case "partitioned", "partitioned_by_expiry_day" -> JdbcLayout.PARTITIONED_BY_EXPIRY_DAY;
                default -> throw new TypeConversionException("expected standard or partitioned, but was \"" + value + "\"");
            };
        }
    }
}
