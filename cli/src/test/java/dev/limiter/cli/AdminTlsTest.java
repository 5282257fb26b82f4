package dev.limiter.cli;

import com.google.gson.JsonParser;
import dev.limiter.server.ServerConfig;
import dev.limiter.server.StoreServer;
import dev.limiter.server.testing.TestCertificates;
import dev.limiter.server.net.TlsClientAuth;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The admin commands over HTTPS, against a real node with TLS (and mutual TLS) on its admin port. */
@Timeout(60)
class AdminTlsTest
{
    private static final String TOKEN = "admin-tls-test-token-0123456789";

    @TempDir
    Path dir;

    private PolicyCommandTest.Result policy(final String... args)
    {
        return CommandRun.capture(PolicyCommand::run, args, Map.of(AdminClient.TOKEN_ENVIRONMENT, TOKEN), dir);
    }

    @Test
    void policyCommandsTalkHttpsWithTheGivenCaAndClientCertificate() throws Exception
    {
        final TestCertificates pki = new TestCertificates(dir.resolve("pki"), "limiter");
        final TestCertificates.Issued node = pki.issue("node", TestCertificates.KeyForm.SEC1);
        final TestCertificates.Issued operator = pki.issue("operator", TestCertificates.KeyForm.PKCS1); // as cert-manager writes keys
        try (StoreServer server = new StoreServer(new ServerConfig().host("127.0.0.1").port(0).adminPort(0).shards(1).ioThreads(1)
            .policiesFile(Path.of("..", "config", "policies.json")).dataDir(dir.resolve("data")).adminToken(TOKEN)
            .tlsCert(node.certificate()).tlsKey(node.key()).tlsCa(pki.ca()).tlsClientAuth(TlsClientAuth.REQUIRE)).start())
        {
            final String admin = "127.0.0.1:" + server.adminPort();
            final PolicyCommandTest.Result list = policy("list", "--admin", admin, "--tls-ca", pki.ca().toString(),
                "--tls-cert", operator.certificate().toString(), "--tls-key", operator.key().toString());
            assertEquals(0, list.status(), list.toString());
            assertTrue(list.out().contains("orders"), list.out());

            final PolicyCommandTest.Result noClientCertificate = policy("list", "--admin", "https://" + admin, "--tls-ca", pki.ca().toString());
            PolicyCommandTest.assertOneLineFailure(noClientCertificate, "limiter policy: no admin endpoint answered");
            final PolicyCommandTest.Result mixed = policy("list", "--admin", "http://" + admin, "--tls-ca", pki.ca().toString());
            PolicyCommandTest.assertOneLineFailure(mixed, "limiter policy: --admin 'http://" + admin + "' says http:// but TLS is on");
            assertEquals(2, mixed.status());
            final PolicyCommandTest.Result halfAPair = policy("list", "--admin", admin, "--tls-cert", operator.certificate().toString());
            PolicyCommandTest.assertOneLineFailure(halfAPair, "limiter policy: a certificate needs its private key");

            // ./limiter status asks the data port, over TLS too.
            final PrintStream original = System.out;
            final ByteArrayOutputStream captured = new ByteArrayOutputStream();
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            final int status;
            try
            {
                status = new picocli.CommandLine(new StatusCommand()).execute("--server", "127.0.0.1:" + server.port(), "--json",
                    "--tls-ca", pki.ca().toString(), "--tls-cert", operator.certificate().toString(), "--tls-key", operator.key().toString());
            }
            finally
            {
                System.setOut(original);
            }
            assertEquals(0, status, captured.toString(StandardCharsets.UTF_8));
            final String printed = captured.toString(StandardCharsets.UTF_8);
            assertEquals("LEADER", JsonParser.parseString(printed).getAsJsonObject().getAsJsonArray("members").get(0)
                .getAsJsonObject().get("role").getAsString(), printed);
        }
    }
}
