package io.retrysafe.cli;

import io.retrysafe.AesGcmProtection;
import io.retrysafe.KeyLint.Finding;
import io.retrysafe.KeyLint.LintReport;
import io.retrysafe.StoredResponse;
import io.retrysafe.jdbc.JdbcAdmin.AgeBucket;
import io.retrysafe.jdbc.JdbcAdmin.KeyedSummary;
import io.retrysafe.jdbc.JdbcAdmin.RecordSummary;
import io.retrysafe.jdbc.JdbcAdmin.Stats;
import io.retrysafe.spi.IdempotencyRecord;
import io.retrysafe.spi.RecordStatus;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The console's pages as HTML: plain server-rendered markup, one stylesheet, no script. Each method
 * takes what the store answered and renders it; nothing here reads the store or decides anything.
 */
final class ConsolePages {
    /** The longest stored body shown; the rest is counted, not shown. */
    static final int MAX_BODY_SHOWN = 16 * 1024;

    private final String table;
    private final String csrf;
    private final boolean revealKeys;

    ConsolePages(String table, String csrf, boolean revealKeys) {
        this.table = table;
        this.csrf = csrf;
        this.revealKeys = revealKeys;
    }

    /** One bar of a chart. */
    record Bar(String label, long value, String kind) {
    }

    /** A listed record with the reference that names it in links. */
    record Row(RecordSummary summary, String ref) {
    }

    /** What the overview shows of the oldest records read, grouped. */
    record Sample(int size, boolean truncated, Map<String, Map<RecordStatus, Long>> byScope,
            Map<String, Long> byRoute, List<Bar> byExpiry, long stuck) {
    }

    // ---------------------------------------------------------------- pages

    String overview(Stats stats, Sample sample) {
        Html h = new Html();
        h.el("h1", "Overview");
        h.raw("<p class=\"lead\">").esc(table).raw(": ").esc(stats.live()).raw(" live records, ")
                .esc(StatsCommand.human(stats.tableBytes())).raw(" on disk. ");
        h.raw("<a href=\"/stuck\" id=\"stuck-count\">").esc(sample.stuck()).raw(" stuck</a> (in progress past their lease).</p>");
        h.raw("<section class=\"grid\">");
        h.raw("<div>").el("h2", "By state");
        chart(h, "records by state", List.of(
                new Bar("in progress", stats.count(RecordStatus.IN_PROGRESS), "in-progress"),
                new Bar("completed", stats.count(RecordStatus.COMPLETED), "completed"),
                new Bar("failed", stats.count(RecordStatus.FAILED), "failed")));
        h.raw("</div><div>").el("h2", "By age");
        chart(h, "records by age", java.util.Arrays.stream(AgeBucket.values())
                .map(b -> new Bar(b.label(), stats.byAge().get(b), "age")).toList());
        h.raw("</div><div>").el("h2", "Purge backlog");
        h.raw("<p><strong id=\"purge-backlog\">").esc(stats.expired()).raw("</strong> expired records not purged yet"
                + " (absent for every request; the purge deletes them in batches).</p>");
        chart(h, "live and expired records", List.of(new Bar("live", stats.live(), "completed"),
                new Bar("expired", stats.expired(), "expired")));
        h.raw("</div><div>").el("h2", "By expiry");
        chart(h, "records by time to expiry", sample.byExpiry());
        h.raw("</div></section>");
        h.el("h2", "By route");
        chart(h, "records by route", sample.byRoute().entrySet().stream()
                .map(e -> new Bar(e.getKey(), e.getValue(), "route")).toList());
        h.el("h2", "By scope");
        h.raw("<table><thead><tr><th>scope</th><th>in progress</th><th>completed</th><th>failed</th></tr></thead><tbody>");
        sample.byScope().forEach((scope, counts) -> {
            h.raw("<tr>").el("td", scope);
            for (RecordStatus s : RecordStatus.values()) {
                h.raw("<td class=\"num\">").esc(counts.getOrDefault(s, 0L)).raw("</td>");
            }
            h.raw("</tr>");
        });
        h.raw("</tbody></table>");
        h.raw("<p class=\"note\">By route, scope and expiry: the ").esc(sample.size()).raw(" oldest live records")
                .raw(sample.truncated() ? " (there are more; counts by state and age above cover them all)" : "")
                .raw(". Reading them scans the table: the page reads it when opened, never on a timer.</p>");
        return page("Overview", "/", h);
    }

    String records(String title, String path, List<Row> rows, boolean truncated, String empty, Instant now) {
        Html h = new Html();
        h.el("h1", title);
        if (path.equals("/records")) {
            h.raw("<nav class=\"filters\">Show: <a href=\"/records\">all</a>");
            for (RecordStatus s : RecordStatus.values()) {
                h.raw(" <a href=\"/records?status=").esc(s.name()).raw("\">").esc(label(s)).raw("</a>");
            }
            h.raw("</nav>");
            lookupForm(h);
        } else {
            h.raw("<p class=\"lead\">In progress past their lease: the attempt that held each one died or hangs. "
                    + "A retry takes such a key over by itself; release one only when no retry will come and "
                    + "the operation is safe to run again.</p>");
        }
        if (rows.isEmpty()) {
            h.raw("<p class=\"empty\">").esc(empty).raw("</p>");
            return page(title, path, h);
        }
        h.raw("<table class=\"records\"><thead><tr><th>scope</th><th>key digest</th><th>state</th><th>attempt</th>"
                + "<th>created</th><th>lease until</th><th>expires</th><th></th></tr></thead><tbody>");
        for (Row row : rows) {
            RecordSummary r = row.summary();
            h.raw("<tr>").el("td", r.scope()).raw("<td><code>").esc(r.keyDigest()).raw("</code></td>");
            h.raw("<td><span class=\"state ").esc(cssState(r.status())).raw("\">").esc(label(r.status())).raw("</span></td>");
            h.raw("<td class=\"num\">").esc(r.attempt()).raw("</td>");
            h.el("td", BaseCommand.time(r.createdAt()) + " (" + age(r.createdAt(), now) + " ago)");
            h.raw("<td>").esc(BaseCommand.time(r.leaseExpiresAt()));
            if (r.status() == RecordStatus.IN_PROGRESS && r.leaseExpiresAt().isBefore(now)) {
                h.raw(" <span class=\"warn\">ran out</span>");
            }
            h.raw("</td>").el("td", BaseCommand.time(r.expiresAt()));
            h.raw("<td class=\"actions\"><a href=\"/record?ref=").esc(row.ref()).raw("\">inspect</a>");
            if (r.status() == RecordStatus.IN_PROGRESS) {
                h.raw(" <a class=\"danger\" href=\"/release?ref=").esc(row.ref()).raw("\">release…</a>");
            }
            h.raw("</td></tr>");
        }
        h.raw("</tbody></table>");
        if (truncated) {
            h.raw("<p class=\"note\">Only the oldest ").esc(rows.size()).raw(" are shown; there may be more.</p>");
        }
        return page(title, path, h);
    }

    String record(IdempotencyRecord r, String ref, String rawKey, boolean showBody, Instant now) {
        Html h = new Html();
        h.el("h1", "Record " + r.key().digest());
        h.raw("<table class=\"fields\"><tbody>");
        field(h, "scope", r.key().scope());
        h.raw("<tr><th>key</th><td><code>").esc(r.key().digest()).raw("</code> (digest)");
        if (rawKey != null) {
            h.raw("<br>raw: <code id=\"raw-key\">").esc(LintCommand.quote(rawKey)).raw("</code>");
        } else if (revealKeys) {
            h.raw(" <a href=\"/record?ref=").esc(ref).raw("&amp;key=1\">show the raw key</a>");
        }
        h.raw("</td></tr>");
        h.raw("<tr><th>state</th><td><span id=\"state\" class=\"state ").esc(cssState(r.status())).raw("\">")
                .esc(label(r.status())).raw("</span></td></tr>");
        field(h, "attempt", r.attempt());
        field(h, "fingerprint", r.fingerprint().hex());
        field(h, "created", BaseCommand.time(r.createdAt()) + " (" + age(r.createdAt(), now) + " ago)");
        String lease = BaseCommand.time(r.leaseExpiresAt());
        if (r.status() == RecordStatus.IN_PROGRESS) {
            lease += r.leaseExpiresAt().isBefore(now) ? " (ran out " + age(r.leaseExpiresAt(), now) + " ago)"
                    : " (alive)";
        }
        field(h, "lease until", lease);
        field(h, "completed", BaseCommand.time(r.completedAt()));
        field(h, "expires", BaseCommand.time(r.expiresAt()));
        field(h, "response", r.response().map(InspectCommand::describe).orElse("-"));
        h.raw("</tbody></table>");
        r.response().ifPresent(response -> answer(h, response, ref, showBody));
        if (r.status() == RecordStatus.IN_PROGRESS) {
            h.raw("<p><a class=\"button danger\" href=\"/release?ref=").esc(ref).raw("\">Release…</a></p>");
        }
        return page("Record", "/records", h);
    }

    /** The stored answer as it is at rest: a sealed one stays sealed, a redacted one is what was stored. */
    private static void answer(Html h, StoredResponse response, String ref, boolean showBody) {
        h.el("h2", "Stored answer");
        byte[] body = response.body();
        Optional<String> keyId = AesGcmProtection.sealedKeyId(response);
        if (keyId.isPresent()) {
            h.raw("<p id=\"answer\" class=\"sealed\">Sealed at rest (AES-GCM, key id <code>").esc(keyId.get())
                    .raw("</code>), ").esc(body.length).raw(" bytes. The console holds no key and does not open it.</p>");
            return;
        }
        if (!showBody) {
            h.raw("<p>The body may hold personal data: it is shown only when asked, as it is stored (a redacted "
                    + "answer stays redacted). <a id=\"show-body\" href=\"/record?ref=").esc(ref)
                    .raw("&amp;body=1\">Show the stored body</a></p>");
            return;
        }
        String text = utf8(body, MAX_BODY_SHOWN);
        if (text == null) {
            h.raw("<p id=\"answer\">").esc(body.length).raw(" bytes, not UTF-8 text: not shown.</p>");
            return;
        }
        h.raw("<pre id=\"answer\">").esc(text).raw("</pre>");
        if (body.length > MAX_BODY_SHOWN) {
            h.raw("<p class=\"note\">The first ").esc(MAX_BODY_SHOWN).raw(" of ").esc(body.length).raw(" bytes.</p>");
        }
    }

    String releaseConfirm(IdempotencyRecord r, String ref, Instant now) {
        Html h = new Html();
        h.el("h1", "Release " + r.key().digest() + "?");
        h.raw("<p class=\"lead\">Its IN_PROGRESS record becomes FAILED, and the next retry with the same request runs "
                + "the operation again, as attempt ").esc(r.attempt() + 1).raw(". Whoever holds it now can no longer "
                + "complete it. Safe only when that attempt is dead or hung and its effect did not happen, or is "
                + "safe to repeat.</p>");
        h.raw("<table class=\"fields\"><tbody>");
        field(h, "scope", r.key().scope());
        field(h, "key digest", r.key().digest());
        field(h, "attempt", r.attempt());
        field(h, "created", BaseCommand.time(r.createdAt()) + " (" + age(r.createdAt(), now) + " ago)");
        field(h, "lease until", BaseCommand.time(r.leaseExpiresAt()));
        h.raw("</tbody></table>");
        h.raw("<form method=\"post\" action=\"/release\" class=\"confirm\">");
        hidden(h, "ref", ref);
        hidden(h, "attempt", Integer.toString(r.attempt()));
        h.raw("<label for=\"confirm\">Type the key's digest (<code>").esc(r.key().digest()).raw("</code>) to confirm"
                + "</label> <input id=\"confirm\" name=\"confirm\" autocomplete=\"off\" required>"
                + " <button type=\"submit\" class=\"danger\">Release attempt ").esc(r.attempt()).raw("</button></form>");
        return page("Release", "/stuck", h);
    }

    /** The outcome of a release, or of anything that changed nothing. */
    String message(String title, String path, String text, boolean ok) {
        Html h = new Html();
        h.el("h1", title);
        h.raw("<p id=\"outcome\" class=\"").raw(ok ? "ok" : "warn").raw("\">").esc(text).raw("</p>");
        return page(title, path, h);
    }

    String keys(List<LintReport> reports, List<String> generated, Map<String, String> form) {
        Html h = new Html();
        h.el("h1", "Keys");
        h.raw("<section class=\"grid\"><div>").el("h2", "Make a key");
        h.raw("<p>One per intent: make it once, keep it, and send it unchanged on every retry.</p>");
        h.raw("<form method=\"post\" action=\"/keys/generate\">");
        h.raw("<p><label><input type=\"radio\" name=\"type\" value=\"v7\" checked> UUIDv7 (time-ordered)</label><br>"
                + "<label><input type=\"radio\" name=\"type\" value=\"v4\"> UUIDv4 (random)</label><br>"
                + "<label><input type=\"radio\" name=\"type\" value=\"intent\"> derived from the intent</label></p>");
        input(h, "principal", "principal (intent)", form);
        input(h, "operation", "operation (intent)", form);
        input(h, "business-date", "business date, yyyy-MM-dd (intent, optional)", form);
        h.raw("<p><label for=\"payload\">payload as JSON (intent)</label><br><textarea id=\"payload\" name=\"payload\" "
                + "rows=\"3\">").esc(form.getOrDefault("payload", "")).raw("</textarea></p>");
        h.raw("<button type=\"submit\">Make</button></form>");
        if (!generated.isEmpty()) {
            h.raw("<p>Made:</p><pre id=\"generated\">");
            generated.forEach(k -> h.esc(k).raw("\n"));
            h.raw("</pre>");
        }
        h.raw("</div><div>").el("h2", "Check keys");
        h.raw("<p>What the server refuses, and what it accepts but protects an intent badly. One key a line.</p>");
        h.raw("<form method=\"post\" action=\"/keys/lint\"><textarea id=\"lint-keys\" name=\"keys\" rows=\"4\">")
                .esc(form.getOrDefault("keys", "")).raw("</textarea><br><button type=\"submit\">Check</button></form>");
        for (LintReport report : reports) {
            String bits = String.format(Locale.ROOT, "~%.0f bits", report.estimatedEntropyBits());
            String verdict = report.isClean() ? "ok" : report.hasErrors() ? "refused by the server"
                    : "accepted, with warnings";
            h.raw("<div class=\"lint ").raw(report.isClean() ? "ok" : report.hasErrors() ? "error" : "warn").raw("\">");
            h.raw("<p><code>").esc(LintCommand.quote(report.key())).raw("</code>: ").esc(verdict + " (" + bits + ")").raw("</p>");
            if (!report.findings().isEmpty()) {
                h.raw("<ul>");
                for (Finding f : report.findings()) {
                    h.raw("<li class=\"finding\" data-code=\"").esc(f.code()).raw("\">").esc(f.severity() + " " + f.code()
                            + ": " + f.message()).raw("</li>");
                }
                h.raw("</ul>");
            }
            h.raw("</div>");
        }
        h.raw("</div></section>");
        return page("Keys", "/keys", h);
    }

    /** A page that says what went wrong, with nothing of the store's internals. */
    String error(int status, String text) {
        Html h = new Html();
        h.el("h1", status == 401 ? "Access token needed" : "Not done");
        h.raw("<p id=\"error\" class=\"warn\">").esc(text).raw("</p>");
        return page("Error", "", h);
    }

    // ---------------------------------------------------------------- parts

    private void lookupForm(Html h) {
        h.raw("<form method=\"post\" action=\"/lookup\" class=\"lookup\"><label>scope <input name=\"scope\" required>"
                + "</label> <label>key <input name=\"key\" type=\"password\" autocomplete=\"off\" required></label> "
                + "<button type=\"submit\">Inspect</button></form>");
    }

    private void hidden(Html h, String name, String value) {
        h.raw("<input type=\"hidden\" name=\"").esc(name).raw("\" value=\"").esc(value).raw("\">");
    }

    private static void input(Html h, String name, String label, Map<String, String> form) {
        h.raw("<p><label for=\"").esc(name).raw("\">").esc(label).raw("</label><br><input id=\"").esc(name)
                .raw("\" name=\"").esc(name).raw("\" value=\"").esc(form.getOrDefault(name, "")).raw("\"></p>");
    }

    private static void field(Html h, String name, Object value) {
        h.raw("<tr>").el("th", name).el("td", value).raw("</tr>");
    }

    /** Horizontal bars in SVG: sizes are attributes, colours come from the stylesheet. */
    private static void chart(Html h, String title, List<Bar> bars) {
        if (bars.isEmpty()) {
            h.raw("<p class=\"empty\">none</p>");
            return;
        }
        long max = Math.max(1, bars.stream().mapToLong(Bar::value).max().orElse(1));
        int rowHeight = 26;
        h.raw("<svg class=\"chart\" role=\"img\" viewBox=\"0 0 520 ").esc(bars.size() * rowHeight).raw("\" width=\"520\""
                + " height=\"").esc(bars.size() * rowHeight).raw("\"><title>").esc(title).raw("</title>");
        int y = 0;
        for (Bar bar : bars) {
            long width = Math.round(300.0 * bar.value() / max);
            h.raw("<text x=\"0\" y=\"").esc(y + 17).raw("\" class=\"label\">").esc(abbreviate(bar.label(), 26)).raw("</text>");
            h.raw("<rect x=\"180\" y=\"").esc(y + 4).raw("\" height=\"18\" width=\"").esc(Math.max(width, 1))
                    .raw("\" class=\"bar ").esc(bar.kind()).raw("\"></rect>");
            h.raw("<text x=\"").esc(186 + width).raw("\" y=\"").esc(y + 17).raw("\" class=\"value\">").esc(bar.value())
                    .raw("</text>");
            y += rowHeight;
        }
        h.raw("</svg>");
    }

    private String page(String title, String active, Html body) {
        Html h = new Html();
        h.raw("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>").esc(title)
                .raw(" · RetrySafe console</title><meta name=\"viewport\" content=\"width=device-width\">"
                        + "<link rel=\"stylesheet\" href=\"/static/console.css\"></head><body><header>"
                        + "<span class=\"brand\">RetrySafe console</span><nav>");
        link(h, "/", "Overview", active);
        link(h, "/records", "Records", active);
        link(h, "/stuck", "Stuck keys", active);
        link(h, "/keys", "Keys", active);
        h.raw("</nav><span class=\"table\">").esc(table).raw("</span></header><main>").raw(withCsrf(body.toString()))
                .raw("</main></body></html>");
        return h.toString();
    }

    /** Every POST form carries the CSRF token; added here so that no form can forget it. */
    private String withCsrf(String body) {
        String field = "<input type=\"hidden\" name=\"csrf\" value=\"" + Html.text(csrf) + "\">";
        return addToForms(body, field);
    }

    private static String addToForms(String body, String field) {
        StringBuilder out = new StringBuilder(body.length() + 256);
        int from = 0;
        int at;
        while ((at = body.indexOf("<form method=\"post\"", from)) >= 0) {
            int end = body.indexOf('>', at) + 1;
            out.append(body, from, end);
            out.append(field);
            from = end;
        }
        return out.append(body.substring(from)).toString();
    }

    private static void link(Html h, String href, String text, String active) {
        h.raw("<a href=\"").esc(href).raw("\"").raw(href.equals(active) ? " class=\"active\"" : "").raw(">").esc(text)
                .raw("</a>");
    }

    static String label(RecordStatus status) {
        return status.name().toLowerCase(Locale.ROOT).replace('_', ' ');
    }

    private static String cssState(RecordStatus status) {
        return status.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    private static String age(Instant then, Instant now) {
        if (then == null) {
            return "-";
        }
        long s = Math.max(0, now.getEpochSecond() - then.getEpochSecond());
        return s < 120 ? s + " s" : s < 7200 ? s / 60 + " min" : s < 172_800 ? s / 3600 + " h" : s / 86_400 + " d";
    }

    private static String abbreviate(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max - 1) + "…";
    }

    /** The first {@code max} bytes as UTF-8 text, or null if they are not text. */
    private static String utf8(byte[] body, int max) {
        // A character cut at the limit is up to 3 bytes of a longer one: try without them.
        for (int n = Math.min(body.length, max), tries = 0; n >= 0 && tries < 4; n--, tries++) {
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(body, 0, n)).toString();
            } catch (CharacterCodingException e) {
                if (n == body.length) {
                    return null; // not cut: not text
                }
            }
        }
        return null;
    }
}
