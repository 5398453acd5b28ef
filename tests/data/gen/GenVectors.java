// Writes test vectors computed by OpenSearch's own routing classes:
//   murmur3_vectors.tsv: Murmur3HashFunction.hash(String) of varied strings
//   route_vectors.tsv:   OperationRouting.generateShardId(IndexMetadata, id, routing)
// Run by tests/data/gen-vectors.sh; the output is committed.
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.opensearch.Version;
import org.opensearch.cluster.metadata.IndexMetadata;
import org.opensearch.cluster.routing.Murmur3HashFunction;
import org.opensearch.cluster.routing.OperationRouting;
import org.opensearch.common.settings.Settings;

public class GenVectors {
    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) b.append(String.format("%02x", x & 0xff));
        return b.toString();
    }

    static List<String> strings(Random r) {
        List<String> out = new ArrayList<>();
        String[] fixed = {"", "a", "ab", "abc", "abcd", "abcde", "0", "1", "42", "-1",
            "\u00e9", "caf\u00e9", "\u4e2d\u6587", "\u65e5\u672c\u8a9e\u306e\u6587\u66f8",
            "\ud83d\ude00", "a\ud83d\ude00", "\ud83d\ude00\ud83d\ude01", "x\ud834\udd1e\u00e9\u4e2d",
            "\u0000", "tab\tnew\nline", "quote\"back\\slash", "\uffff", "\ud7ff\ue000",
            "550e8400-e29b-41d4-a716-446655440000", "\u0410\u0411\u0412", "\u05d0\u05d1"};
        for (String f : fixed) out.add(f);
        String[] alphabets = {"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_",
            "\u4e00\u4e01\u4e03\u4e07\u4e08\u4e09\u4e0a\u4e0b\u4e0d\u4e0e\u6587\u5b57",
            "\u00e0\u00e9\u00ee\u00f5\u00fc\u00df\u0107\u0161"};
        for (int i = 0; i < 120; i++) {
            String alpha = alphabets[i % alphabets.length];
            int len = i < 100 ? 1 + r.nextInt(40) : 300 + r.nextInt(300);
            StringBuilder b = new StringBuilder();
            for (int k = 0; k < len; k++) {
                if (i % 7 == 6 && r.nextInt(5) == 0) b.appendCodePoint(0x1F300 + r.nextInt(0x2FF));
                else b.append(alpha.charAt(r.nextInt(alpha.length())));
            }
            out.add(b.toString());
        }
        return out;
    }

    static IndexMetadata meta(int shards, int routingShards, int partition) {
        Settings.Builder s = Settings.builder()
            .put(IndexMetadata.SETTING_VERSION_CREATED, Version.CURRENT)
            .put(IndexMetadata.SETTING_NUMBER_OF_SHARDS, shards)
            .put(IndexMetadata.SETTING_NUMBER_OF_REPLICAS, 0);
        if (partition > 1) s.put(IndexMetadata.SETTING_ROUTING_PARTITION_SIZE, partition);
        return IndexMetadata.builder("test").settings(s).setRoutingNumShards(routingShards).build();
    }

    public static void main(String[] args) throws Exception {
        Random r = new Random(20261202L);
        List<String> strs = strings(r);
        try (PrintWriter w = new PrintWriter(args[0] + "/murmur3_vectors.tsv", "UTF-8")) {
            w.println("# hash<TAB>UTF-8 hex; by OpenSearch " + Version.CURRENT + " Murmur3HashFunction");
            for (String s : strs) w.println(Murmur3HashFunction.hash(s) + "\t" + hex(s));
            // Code points far above the emoji: surrogate pairs whose high half
            // uses every bit (U+50000 and up), the last code point, tags.
            String[] high = {"\udbff\udfff", "\udb40\udc41\udb40\udc7f", "\udb80\udc00",
                "a\ud940\udc00b", "\ud9c0\ude00\u00e9", "\udbbf\udffd", "x\udb00\udc01y"};
            for (String s : high) w.println(Murmur3HashFunction.hash(s) + "\t" + hex(s));
        }
        // shards, routing_num_shards (as the server would store it), partition size
        int[][] layouts = {{1, 1024, 1}, {2, 1024, 1}, {3, 768, 1}, {5, 640, 1}, {6, 768, 1},
            {7, 896, 1}, {12, 768, 1}, {30, 960, 1}, {6, 6, 1}, {4, 8, 3}, {6, 768, 2},
            {6, 12, 4}, {3, 30, 1}, {8, 1024, 5}, {12, 768, 4}};
        try (PrintWriter w = new PrintWriter(args[0] + "/route_vectors.tsv", "UTF-8")) {
            w.println("# shards<TAB>routing_shards<TAB>partition<TAB>shard<TAB>id hex<TAB>routing hex or -;"
                + " by OpenSearch " + Version.CURRENT + " OperationRouting.generateShardId");
            for (int[] l : layouts) {
                IndexMetadata m = meta(l[0], l[1], l[2]);
                for (int i = 0; i < 24; i++) {
                    String id = strs.get(r.nextInt(strs.size()));
                    if (id.isEmpty()) id = "id" + i;
                    String routing = null;
                    if (l[2] > 1 || i % 3 == 0) {
                        routing = strs.get(r.nextInt(strs.size()));
                        if (routing.isEmpty()) routing = "r" + i;
                    }
                    int shard = OperationRouting.generateShardId(m, id, routing);
                    w.println(l[0] + "\t" + l[1] + "\t" + l[2] + "\t" + shard + "\t" + hex(id) + "\t"
                        + (routing == null ? "-" : hex(routing)));
                }
            }
            // Partitioned routing whose hash lies within the partition size of
            // Integer.MAX_VALUE: hash + offset wraps around in Java int addition
            // for the larger offsets. Routing shards not a power of two (768,
            // 640), where a sum computed without the wraparound lands elsewhere.
            int[][] wrapLayouts = {{6, 768, 100}, {5, 640, 64}};
            for (int[] l : wrapLayouts) {
                IndexMetadata m = meta(l[0], l[1], l[2]);
                int found = 0;
                for (long k = 0; found < 2; k++) {
                    String routing = "wrap" + l[2] + "-" + k;
                    int h = Murmur3HashFunction.hash(routing);
                    if (h < Integer.MAX_VALUE - (l[2] - 1) || h > Integer.MAX_VALUE - l[2] / 2)
                        continue; // and at least a few offsets (0..partition-1) wrap
                    found++;
                    for (int i = 0; i < 40; i++) {
                        String id = "id" + i;
                        int shard = OperationRouting.generateShardId(m, id, routing);
                        w.println(l[0] + "\t" + l[1] + "\t" + l[2] + "\t" + shard + "\t" + hex(id)
                            + "\t" + hex(routing));
                    }
                }
            }
        }
    }
}
