/*
 * libesbulk test helper: the one ingest processor the tests use ("set": a
 * field to a constant value), for OpenSearch 3.x, where the ingest-common
 * module is not published on Maven Central. OsNodeLauncher loads it only
 * there; on 2.19 the real IngestCommonPlugin provides "set".
 */
package esbulk.os;

import java.util.Collections;
import java.util.Map;

import org.opensearch.ingest.AbstractProcessor;
import org.opensearch.ingest.ConfigurationUtils;
import org.opensearch.ingest.IngestDocument;
import org.opensearch.ingest.Processor;
import org.opensearch.plugins.IngestPlugin;
import org.opensearch.plugins.Plugin;

public final class SetProcessorPlugin extends Plugin implements IngestPlugin {

    static final class SetProcessor extends AbstractProcessor {
        private final String field;
        private final Object value;

        SetProcessor(String tag, String description, String field, Object value) {
            super(tag, description);
            this.field = field;
            this.value = value;
        }

        @Override
        public IngestDocument execute(IngestDocument doc) {
            doc.setFieldValue(field, value);
            return doc;
        }

        @Override
        public String getType() {
            return "set";
        }
    }

    @Override
    public Map<String, Processor.Factory> getProcessors(Processor.Parameters parameters) {
        Processor.Factory f = (factories, tag, description, config) -> {
            String field = ConfigurationUtils.readStringProperty("set", tag, config, "field");
            Object value = ConfigurationUtils.readObject("set", tag, config, "value");
            return new SetProcessor(tag, description, field, value);
        };
        return Collections.singletonMap("set", f);
    }
}
