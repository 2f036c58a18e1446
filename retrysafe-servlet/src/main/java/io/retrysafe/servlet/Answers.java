package io.retrysafe.servlet;

import io.retrysafe.http.HttpAnswer;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import java.util.Map;

/** Writes the shared decisions' answers onto a servlet response. */
final class Answers {
    private Answers() {
    }

    /** {@code answer} as the whole response: its status, headers (the first value set, the rest added) and body. */
    static void send(HttpServletResponse response, HttpAnswer answer) throws IOException {
        response.setStatus(answer.status());
        for (Map.Entry<String, List<String>> header : answer.headers().entrySet()) {
            List<String> values = header.getValue();
            for (int i = 0; i < values.size(); i++) {
                if (i == 0) {
                    response.setHeader(header.getKey(), values.get(i));
                } else {
                    response.addHeader(header.getKey(), values.get(i));
                }
            }
        }
        byte[] body = answer.body();
        if (body.length > 0) {
            response.setContentLength(body.length);
            response.getOutputStream().write(body);
        }
    }
}
