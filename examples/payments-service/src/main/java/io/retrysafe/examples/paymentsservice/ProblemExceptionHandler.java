package io.retrysafe.examples.paymentsservice;

import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** Answers a {@link Problems.ProblemException} with its problem document. */
@RestControllerAdvice
class ProblemExceptionHandler {

    @ExceptionHandler(Problems.ProblemException.class)
    ResponseEntity<ProblemDetail> handle(Problems.ProblemException e) {
        return e.response();
    }
}
