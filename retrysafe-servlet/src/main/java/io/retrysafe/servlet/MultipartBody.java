package io.retrysafe.servlet;

import io.retrysafe.http.HttpForms;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.Part;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * A {@code multipart/form-data} body as the fingerprint sees it: the parts the container parsed (it
 * keeps them, so the handler's {@code getParts()} and {@code MultipartFile} parameters still get
 * them), each with its name, file name, content type and content, ordered by name. The boundary is
 * not in it: a client draws a new one for each retry of the same upload.
 */
final class MultipartBody {
    static final String MEDIA_TYPE = HttpForms.MULTIPART;

    /** What reading the parts gave. */
    sealed interface Read {
    }

    /** The canonical bytes to fingerprint. */
    record Parts(byte[] canonical) implements Read {
    }

    /** More than the fingerprint bound, or over the container's own multipart limits. */
    record TooLarge() implements Read {
    }

    /** The container could not parse the body. */
    record Malformed() implements Read {
    }

    /** The target has no multipart configuration: the container does not parse parts there. */
    record NotParsed() implements Read {
    }

    private MultipartBody() {
    }

    static boolean isMultipart(String contentType) {
        return HttpForms.isMultipart(contentType);
    }

    static Read read(HttpServletRequest request, int max) throws IOException {
        List<Part> parts;
        try {
            parts = new ArrayList<>(request.getParts());
        } catch (IllegalStateException e) {
            // Tomcat: no cause when the target has no multipart configuration, a size limit's exception otherwise.
            return e.getCause() == null ? new NotParsed() : new TooLarge();
        } catch (ServletException | IOException e) {
            return new Malformed();
        }
        parts.sort(Comparator.comparing(Part::getName)); // stable: parts of one name keep their order
        HttpForms.Parts out = new HttpForms.Parts();
        for (Part part : parts) {
            out.part(part.getName(), part.getSubmittedFileName(), part.getContentType());
            if (part.getSize() > max - out.size()) {
                return new TooLarge();
            }
            try (InputStream in = part.getInputStream()) {
                out.content(in.readNBytes(max - out.size() + 1));
            }
            if (out.size() > max) {
                return new TooLarge();
            }
        }
        return new Parts(out.toByteArray());
    }
}
