package io.retrysafe.gateway;

import static io.retrysafe.gateway.GatewayHttp.basic;

import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.util.List;
import org.springframework.security.crypto.bcrypt.BCrypt;

/** The contract with callers named by HTTP Basic against a users file of bcrypt hashes; the store is the subclass's. */
abstract class BasicScopeContract extends GatewayContract {

    @Override
    void prepare() throws Exception {
        Files.writeString(dir.resolve("users.txt"), "alice:" + BCrypt.hashpw("alice-secret", BCrypt.gensalt(4))
                + "\nbob:" + BCrypt.hashpw("bob-secret", BCrypt.gensalt(4)) + "\n");
    }

    @Override
    String scope() {
        return "basic:\n  users-file: users.txt\n";
    }

    @Override
    List<String> challenge() {
        return List.of("Basic realm=\"retrysafe-gateway\", charset=\"UTF-8\"");
    }

    @Override
    HttpRequest.Builder as(String name, HttpRequest.Builder request) {
        return request.header("Authorization", basic(name, name + "-secret"));
    }

    @Override
    HttpRequest.Builder asNobody(HttpRequest.Builder request) {
        return request.header("Authorization", basic("alice", "wrong"));
    }
}
