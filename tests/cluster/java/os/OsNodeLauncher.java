/*
 * libesbulk test helper: runs ONE OpenSearch node (2.19 or 3.x) in this JVM.
 *
 * Started by tests/cluster/opensearch.sh, which compiles this file against the
 * jars fetched from Maven Central (no distribution tarball, no plugin zips).
 * The bundled modules are loaded as classpath plugins through the protected
 * Node constructor, the way test frameworks embed a node.
 *
 * Usage: java -cp LIB/*:CLASSES esbulk.os.OsNodeLauncher -Ekey=value ...
 *   path.home and node.name are required; everything else is passed through
 *   as node settings. The node runs until SIGTERM/SIGINT (graceful close).
 */
package esbulk.os;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.Version;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.plugins.PluginInfo;

public final class OsNodeLauncher {

    /**
     * Modules of the default distribution that the test workload needs: the
     * 2.x class name, then the 3.x one (3.0 renamed them ...ModulePlugin).
     * ingest-common is not published for 3.x: there SetProcessorPlugin gives
     * the one processor the tests use.
     */
    private static final String[][] MODULE_PLUGINS = {
        {"org.opensearch.transport.Netty4Plugin", "org.opensearch.transport.Netty4ModulePlugin"},
        {"org.opensearch.analysis.common.CommonAnalysisPlugin",
         "org.opensearch.analysis.common.CommonAnalysisModulePlugin"},
        {"org.opensearch.painless.PainlessPlugin", "org.opensearch.painless.PainlessModulePlugin"},
        {"org.opensearch.index.mapper.MapperExtrasPlugin",
         "org.opensearch.index.mapper.MapperExtrasModulePlugin"},
        {"org.opensearch.join.ParentJoinPlugin", "org.opensearch.join.ParentJoinModulePlugin"},
        {"org.opensearch.index.reindex.ReindexPlugin",
         "org.opensearch.index.reindex.ReindexModulePlugin"},
        {"org.opensearch.search.aggregations.matrix.MatrixAggregationPlugin",
         "org.opensearch.search.aggregations.matrix.MatrixAggregationModulePlugin"},
        {"org.opensearch.ingest.common.IngestCommonPlugin", "esbulk.os.SetProcessorPlugin"},
    };

    private static final String LOG4J2_PROPERTIES = String.join("\n",
        "status = error",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_OUT",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = [%d{ISO8601}][%-5p][%-25c{1.}] [%node_name]%marker %m%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.console.ref = console",
        "logger.deprecation.name = org.opensearch.deprecation",
        "logger.deprecation.level = error",
        "");

    /**
     * Node subclass only to reach the constructor that takes classpath
     * plugins: a Collection of Class (2.x) or of PluginInfo (3.x), one
     * erased signature, so the raw type compiles against both.
     */
    static final class LauncherNode extends Node {
        @SuppressWarnings({"unchecked", "rawtypes"})
        LauncherNode(Environment env, Collection plugins) {
            super(env, plugins, true);
        }
    }

    private OsNodeLauncher() {}

    public static void main(String[] args) throws Exception {
        Settings.Builder builder = Settings.builder();
        for (String arg : args) {
            String kv = arg.startsWith("-E") ? arg.substring(2) : arg;
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                die("bad argument (want -Ekey=value): " + arg);
            }
            builder.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        Settings input = builder.build();
        String home = input.get("path.home");
        String nodeName = input.get("node.name");
        if (home == null || nodeName == null) {
            die("path.home and node.name are required");
        }

        Path homePath = Paths.get(home).toAbsolutePath();
        Path configPath = homePath.resolve("config");
        Files.createDirectories(configPath);
        Files.createDirectories(homePath.resolve("plugins"));
        Files.createDirectories(homePath.resolve("modules"));
        Path log4j = configPath.resolve("log4j2.properties");
        if (!Files.exists(log4j)) {
            Files.write(log4j, LOG4J2_PROPERTIES.getBytes(StandardCharsets.UTF_8));
        }

        Environment env = InternalSettingsPreparer.prepareEnvironment(
            input, Collections.emptyMap(), configPath, () -> nodeName);

        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(nodeName);
        LogConfigurator.configure(env);

        boolean infos = Version.CURRENT.major >= 3;
        List<Object> plugins = new ArrayList<>();
        for (String[] names : MODULE_PLUGINS) {
            String name = infos ? names[1] : names[0];
            if (name == null) {
                continue;
            }
            Class<? extends Plugin> c = Class.forName(name).asSubclass(Plugin.class);
            if (infos) {
                plugins.add(new PluginInfo(c.getName(), "classpath module", "NA", Version.CURRENT,
                    "21", c.getName(), null, Collections.emptyList(), false));
            } else {
                plugins.add(c);
            }
        }

        final Node node;
        try {
            node = new LauncherNode(env, plugins);
        } catch (Throwable t) {
            fail("node could not be created", t);
            return;
        }
        final CountDownLatch keepAlive = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                if (!node.awaitClose(20, TimeUnit.SECONDS)) {
                    System.err.println("esbulk launcher: node did not close within 20s");
                }
            } catch (IOException | InterruptedException e) {
                System.err.println("esbulk launcher: error while closing node: " + e);
            } finally {
                keepAlive.countDown();
            }
        }, "esbulk-os-shutdown"));

        try {
            node.start();
        } catch (Throwable t) {
            fail("node failed to start", t);
        }
        System.out.println("esbulk launcher: node " + nodeName + " started");
        // Node threads are mostly daemons: keep the JVM alive until shutdown.
        keepAlive.await();
    }

    /** Report and halt: threads of a half-built node must not keep the JVM up. */
    private static void fail(String msg, Throwable t) {
        System.err.println("esbulk launcher: " + msg);
        t.printStackTrace();
        System.err.flush();
        Runtime.getRuntime().halt(1);
    }

    private static void die(String msg) {
        System.err.println("esbulk launcher: " + msg);
        System.exit(2);
    }
}
