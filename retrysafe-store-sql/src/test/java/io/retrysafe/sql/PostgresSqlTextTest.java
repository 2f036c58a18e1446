package io.retrysafe.sql;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The statements the JDBC and the R2DBC store both send are one text: the two marker styles differ in
 * their markers alone, and a statement sent with JDBC's {@code ?} places its parameters in the order of
 * their numbers, as JDBC binds them.
 */
class PostgresSqlTextTest {
    private static final Pattern NUMBERED = Pattern.compile("\\$(\\d+)::[a-z]+");

    private static final Map<String, Function<PostgresSqlText, String>> STATEMENTS = Map.ofEntries(
            Map.entry("claimStatements", PostgresSqlText::claimStatements),
            Map.entry("claimStatement", PostgresSqlText::claimStatement),
            Map.entry("select", PostgresSqlText::select),
            Map.entry("insertCompleted", PostgresSqlText::insertCompleted),
            Map.entry("insertCompletedOrTakeOver", PostgresSqlText::insertCompletedOrTakeOver),
            Map.entry("complete fenced", t -> t.complete(true)),
            Map.entry("complete held", t -> t.complete(false)),
            Map.entry("renewLease", PostgresSqlText::renewLease),
            Map.entry("release", PostgresSqlText::release),
            Map.entry("inspect", PostgresSqlText::inspect),
            Map.entry("purge", PostgresSqlText::purge),
            Map.entry("advancePhase", PostgresSqlText::advancePhase),
            Map.entry("readPhase", PostgresSqlText::readPhase),
            Map.entry("abandonedPhases", PostgresSqlText::abandonedPhases),
            Map.entry("countAbandonedPhases", PostgresSqlText::countAbandonedPhases));

    private final PostgresSqlText jdbc = new PostgresSqlText("app.records", BindMarkers.QUESTION_MARKS);
    private final PostgresSqlText r2dbc = new PostgresSqlText("app.records", BindMarkers.NUMBERED);

    @Test
    void theStylesDifferInTheirMarkersAlone() {
        STATEMENTS.forEach((name, statement) -> {
            String numbered = statement.apply(r2dbc);
            assertThat(numbered).as(name).doesNotContain("?").contains("$1");
            assertThat(NUMBERED.matcher(numbered).replaceAll("?")).as(name).isEqualTo(statement.apply(jdbc));
        });
    }

    @Test
    void everyStatementPlacesItsParametersInTheirOrder() {
        STATEMENTS.forEach((name, statement) -> {
            List<Integer> numbers = numbers(statement.apply(r2dbc));
            for (int i = 0; i < numbers.size(); i++) {
                assertThat(numbers.get(i)).as(name + ", parameter at place " + (i + 1)).isEqualTo(i + 1);
            }
        });
    }

    @Test
    void bothClaimsAreMadeOfTheSameBoundRowAndTakeover() {
        // Compared with JDBC's markers: the two forms number the same parameters differently.
        String[] three = jdbc.claimStatements().split(";");
        String one = jdbc.claimStatement();

        assertThat(three).hasSize(3);
        assertThat(three[0]).isEqualTo(jdbc.setLockTimeout());
        assertThat(three[2]).isEqualTo(PostgresSqlText.RESTORE_LOCK_TIMEOUT);
        assertThat(one).doesNotContain(";").contains(" FROM (" + jdbc.setLockTimeout() + ") AS bound) AS v(");
        String row = three[1].substring(three[1].indexOf(" (SELECT ") + 9, three[1].indexOf(") AS v("));
        assertThat(one).contains(" (SELECT " + row + " FROM (");
        // The same guard for a completed record, and the same takeover.
        assertThat(one.substring(one.indexOf(" AS v("))).isEqualTo(three[1].substring(three[1].indexOf(" AS v(")));
    }

    private static List<Integer> numbers(String sql) {
        List<Integer> numbers = new ArrayList<>();
        Matcher m = NUMBERED.matcher(sql);
        while (m.find()) {
            numbers.add(Integer.parseInt(m.group(1)));
        }
        return numbers;
    }
}
