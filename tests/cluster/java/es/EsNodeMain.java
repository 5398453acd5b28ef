/*
 * libesbulk test helper: starts exactly ONE Elasticsearch node in this JVM.
 *
 * Compiled by tests/cluster/elasticsearch.sh (javac at setup time, output in
 * the cache dir) and run as
 *   java --module-path <home>/lib --add-modules ALL-MODULE-PATH \
 *        -cp <cache>/launcher esbulk.EsNodeMain --config=DIR key=value ...
 * Every key=value argument is one node setting (path.home is required).
 * --config=DIR is the node's own config dir (log4j2.properties lives there).
 * The server runs as a named module, as in the real distribution, so the
 * normal PluginsService loads <path.home>/modules/<name>/ (jars +
 * plugin-descriptor.properties).  No security manager, no bootstrap checks,
 * no CLI/keystore: test use only.
 */
package esbulk;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;

public final class EsNodeMain {

    private EsNodeMain() {}

    private static void usage(String msg) {
        System.err.println("EsNodeMain: " + msg);
        System.err.println("usage: EsNodeMain --config=DIR path.home=DIR [key=value ...]");
        System.exit(2);
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            // Fail fast: a node that cannot start must not linger with
            // half-started non-daemon threads.
            System.err.println("EsNodeMain: node failed to start");
            t.printStackTrace();
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(String[] args) throws Exception {
        Settings.Builder builder = Settings.builder();
        Path configDir = null;
        for (String arg : args) {
            if (arg.startsWith("--config=")) {
                configDir = Path.of(arg.substring("--config=".length()));
                continue;
            }
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                usage("expected key=value, got: " + arg);
            }
            builder.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Settings settings = builder.build();
        if (settings.get("path.home") == null) {
            usage("path.home=... is required");
        }
        if (configDir == null) {
            usage("--config=DIR is required");
        }
        Files.createDirectories(configDir);

        // The ES logging facade must be wired before any ES class logs (x-content
        // provider loading already does), as the real bootstrap does.
        LogConfigurator.registerErrorListener();
        LogConfigurator.configureESLogging();
        final String nodeName = settings.get("node.name", "esbulk-node");
        Environment env = InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), configDir, () -> nodeName);
        LogConfigurator.setNodeName(nodeName);
        LogConfigurator.configure(env, true);

        final Node node = new Node(env);
        final CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(20, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                closed.countDown();
            }
        }, "esbulk-shutdown"));
        node.start();
        System.out.println("EsNodeMain: node [" + nodeName + "] started, pid " + ProcessHandle.current().pid());
        System.out.flush();
        closed.await();
    }
}
