package io.retrysafe.examples.paymentsservice;

import io.retrysafe.examples.paymentscommon.PaymentProblems;
import io.retrysafe.servlet.Problem;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PatchMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /accounts/{id}} answers with {@code ETag: "v<version>"}; {@code PATCH /accounts/{id}}
 * needs it back in {@code If-Match}: the version is the update's idempotency key, so a retried or
 * concurrent PATCH built on a version that has moved on gets {@code 412} instead of overwriting.
 * A PATCH without {@code If-Match} gets {@code 428}; {@code If-Match: *} too, since it names no version.
 */
@RestController
@RequestMapping("/accounts/{id}")
class AccountsController {
    static final int MAX_LABEL = 100;
    // A strong entity tag of ours; weak tags (W/"v1") never match If-Match (strong comparison).
    private static final Pattern ETAG = Pattern.compile("(W/)?\"([^\"]*)\"");
    private static final Pattern VERSION = Pattern.compile("v(\\d{1,18})");

    private final Accounts accounts;

    AccountsController(Accounts accounts) {
        this.accounts = accounts;
    }

    @GetMapping
    ResponseEntity<?> get(@PathVariable String id) {
        return accounts.find(id).<ResponseEntity<?>>map(a -> ResponseEntity.ok().eTag(a.etag()).body(a))
                .orElseGet(() -> PaymentProblems.unknownAccount(id));
    }

    /** Body: a JSON merge patch of the label, {@code {"label":"Rent"}}; nothing else can be changed here. */
    @PatchMapping(consumes = {"application/merge-patch+json", "application/json"})
    ResponseEntity<?> patch(@PathVariable String id, @RequestBody Map<String, Object> patch,
            HttpServletRequest request) {
        String ifMatch = String.join(",", Collections.list(request.getHeaders("If-Match"))).strip();
        if (ifMatch.isEmpty()) {
            return Problems.response(Problem.PRECONDITION_REQUIRED, "send If-Match with the ETag of GET /accounts/"
                    + id + ", so that the change applies only to the version you read");
        }
        if (ifMatch.equals("*")) {
            return Problems.response(Problem.PRECONDITION_REQUIRED, "If-Match: * names no version; send the ETag of "
                    + "GET /accounts/" + id);
        }
        Object label = patch.get("label");
        if (patch.size() != 1 || !(label instanceof String text) || text.isBlank() || text.length() > MAX_LABEL) {
            return PaymentProblems.invalidRequest("send {\"label\":\"…\"} with 1 to " + MAX_LABEL + " characters; only the "
                    + "label can be changed, but got members " + patch.keySet());
        }
        Optional<Accounts.Account> updated = accounts.relabel(id, versions(ifMatch), text.strip());
        if (updated.isPresent()) {
            return ResponseEntity.ok().eTag(updated.get().etag()).body(updated.get());
        }
        return accounts.find(id).<ResponseEntity<?>>map(current -> Problems.response(Problem.PRECONDITION_FAILED,
                "account " + id + " has changed since the version in If-Match (" + ifMatch + "); it is now at "
                        + current.etag() + ": GET it and apply your change again"))
                .orElseGet(() -> PaymentProblems.unknownAccount(id));
    }

    /** The versions named by the strong entity tags in {@code If-Match}. */
    private static Set<Long> versions(String ifMatch) {
        Set<Long> versions = new LinkedHashSet<>();
        Matcher tag = ETAG.matcher(ifMatch);
        while (tag.find()) {
            Matcher v = VERSION.matcher(tag.group(2));
            if (tag.group(1) == null && v.matches()) {
                versions.add(Long.parseLong(v.group(1)));
            }
        }
        return versions;
    }
}
