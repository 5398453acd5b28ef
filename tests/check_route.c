/* The shard functions: Elasticsearch's IndexRoutingTests vectors, the
 * default routing_num_shards rule, partitions, the 9.4 mod function, and
 * vectors computed by the server's own OperationRouting
 * (tests/data/route_vectors.tsv). */
#include "route.h"
#include "murmur3.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t shard_of(int32_t shards, int32_t routing_shards, int32_t partition,
                        esbulk_route_fn_t fn, const char *id, const char *routing)
{
    esbulk_layout_t *l = esbulk_layout_new();
    int32_t s = -1;

    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(esbulk_layout_set_shards(l, shards), ESBULK_OK);
    ck_assert_int_eq(esbulk_layout_set_routing_shards(l, routing_shards), ESBULK_OK);
    ck_assert_int_eq(esbulk_layout_set_partition_size(l, partition), ESBULK_OK);
    ck_assert_int_eq(esbulk_layout_set_function(l, fn), ESBULK_OK);
    ck_assert_int_eq(esbulk_layout_shard(l, id, id ? strlen(id) : 0, routing,
                                         routing ? strlen(routing) : 0, &s),
                     ESBULK_OK);
    esbulk_layout_destroy(l);
    return s;
}

/* IndexRoutingTests.testBWC: 8 shards; each term is used either as the _id
 * or as the routing. The test builds IndexMetadata directly, whose builder
 * defaults routing_num_shards to the shard count (the 7+ default rule lives
 * in index creation), so routing_shards = 8 here. */
START_TEST(test_bwc_terms)
{
    static const struct { const char *term; int shard; } v[] = {
        {"sEERfFzPSI", 1}, {"cNRiIrjzYd", 7}, {"BgfLBXUyWT", 5}, {"cnepjZhQnb", 3},
        {"OKCmuYkeCK", 6}, {"OutXGRQUja", 5}, {"yCdyocKWou", 1}, {"KXuNWWNgVj", 2},
        {"DGJOYrpESx", 4}, {"upLDybdTGs", 5}, {"yhZhzCPQby", 1}, {"EyCVeiCouA", 1},
        {"tFyVdQauWR", 6}, {"nyeRYDnDQr", 6}, {"hswhrppvDH", 0}, {"BSiWvDOsNE", 5},
        {"YHicpFBSaY", 1}, {"EquPtdKaBZ", 4}, {"rSjLZHCDfT", 5}, {"qoZALVcite", 7},
        {"yDCCPVBiCm", 7}, {"ngizYtQgGK", 5}, {"FYQRIBcNqz", 0}, {"EBzEDAPODe", 2},
        {"YePigbXgKb", 1}, {"PeGJjomyik", 3}, {"cyQIvDmyYD", 7}, {"yIEfZrYfRk", 5},
        {"kblouyFUbu", 7}, {"xvIGbRiGJF", 3}, {"KWimwsREPf", 4}, {"wsNavvIcdk", 7},
        {"xkWaPcCmpT", 0}, {"FKKTOnJMDy", 7}, {"RuLzobYixn", 2}, {"mFohLeFRvF", 4},
        {"aAMXnamRJg", 7}, {"zKBMYJDmBI", 0}, {"ElSVuJQQuw", 7}, {"pezPtTQAAm", 7},
        {"zBjjNEjAex", 2}, {"PGgHcLNPYX", 7}, {"hOkpeQqTDF", 3}, {"chZXraUPBH", 7},
        {"FAIcSmmNXq", 5}, {"EZmDicyayC", 0}, {"GRIueBeIyL", 7}, {"qCChjGZYLp", 3},
        {"IsSZQwwnUT", 3}, {"MGlxLFyyCK", 3}, {"YmscwrKSpB", 0}, {"czSljcjMop", 5},
        {"XhfGWwNlng", 1}, {"cWpKJjlzgj", 7}, {"eDzIfMKbvk", 1}, {"WFFWYBfnTb", 0},
        {"oDdHJxGxja", 7}, {"PDOQQqgIKE", 1}, {"bGEIEBLATe", 6}, {"xpRkJPWVpu", 2},
        {"kTwZnPEeIi", 2}, {"DifcuqSsKk", 1}, {"CEmLmljpXe", 5}, {"cuNKtLtyJQ", 7},
        {"yNjiAnxAmt", 5}, {"bVDJDCeaFm", 2}, {"vdnUhGLFtl", 0}, {"LnqSYezXbr", 5},
        {"EzHgydDCSR", 3}, {"ZSKjhJlcpn", 1}, {"WRjUoZwtUz", 3}, {"RiBbcCdIgk", 4},
        {"yizTqyjuDn", 4}, {"QnFjcpcZUT", 4}, {"agYhXYUUpl", 7}, {"UOjiTugjNC", 7},
        {"nICGuWTdfV", 0}, {"NrnSmcnUVF", 2}, {"ZSzFcbpDqP", 3}, {"YOhahLSzzE", 5},
        {"iWswCilUaT", 1}, {"zXAamKsRwj", 2}, {"aqGsrUPHFq", 5}, {"eDItImYWTS", 1},
        {"JAYDZMRcpW", 4}, {"lmvAaEPflK", 7}, {"IKuOwPjKCx", 5}, {"schsINzlYB", 1},
        {"OqbFNxrKrF", 2}, {"QrklDfvEJU", 6}, {"VLxKRKdLbx", 4}, {"imoydNTZhV", 1},
        {"uFZyTyOMRO", 4}, {"nVAZVMPNNx", 3}, {"rPIdESYaAO", 5}, {"nbZWPWJsIM", 0},
        {"wRZXPSoEgd", 3}, {"nGzpgwsSBc", 4}, {"AITyyoyLLs", 4},
    };
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        ck_assert_msg(shard_of(8, 8, 1, ESBULK_ROUTE_LEGACY, v[i].term, NULL) == v[i].shard,
                      "id %s", v[i].term);
        ck_assert_msg(shard_of(8, 8, 1, ESBULK_ROUTE_LEGACY, "abcde", v[i].term) == v[i].shard,
                      "routing %s", v[i].term);
    }
}
END_TEST

/* IndexRoutingTests.testPartitionedIndexShrunk: 4 shards, routing shards 8,
 * partition size 3. */
START_TEST(test_partitioned_shrunk)
{
    static const struct { const char *routing, *id; int shard; } v[] = {
        {"a", "a_0", 1}, {"a", "a_1", 2}, {"a", "a_2", 2}, {"a", "a_3", 2}, {"a", "a_4", 1},
        {"a", "a_5", 2}, {"b", "b_0", 0}, {"b", "b_1", 0}, {"b", "b_2", 0}, {"b", "b_3", 0},
        {"b", "b_4", 3}, {"b", "b_5", 3}, {"c", "c_0", 1}, {"c", "c_1", 1}, {"c", "c_2", 0},
        {"c", "c_3", 0}, {"c", "c_4", 0}, {"c", "c_5", 1}, {"d", "d_0", 2}, {"d", "d_1", 2},
        {"d", "d_2", 3}, {"d", "d_3", 3}, {"d", "d_4", 3}, {"d", "d_5", 3},
    };
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        ck_assert_msg(shard_of(4, 8, 3, ESBULK_ROUTE_LEGACY, v[i].id, v[i].routing) == v[i].shard,
                      "%s/%s", v[i].routing, v[i].id);
}
END_TEST

/* IndexRoutingTests.testPartitionedIndexBWC: 6 shards, partition size 2,
 * routing_num_shards 6 (the IndexMetadata builder's default, as above). */
START_TEST(test_partitioned_bwc)
{
    static const struct { const char *routing, *id; int shard; } v[] = {
        {"a", "a_0", 3}, {"a", "a_1", 2}, {"a", "a_2", 2}, {"a", "a_3", 3},
        {"b", "b_0", 5}, {"b", "b_1", 0}, {"b", "b_2", 0}, {"b", "b_3", 0},
        {"c", "c_0", 4}, {"c", "c_1", 4}, {"c", "c_2", 3}, {"c", "c_3", 4},
        {"d", "d_0", 3}, {"d", "d_1", 4}, {"d", "d_2", 4}, {"d", "d_3", 4},
    };
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        ck_assert_msg(shard_of(6, 6, 2, ESBULK_ROUTE_LEGACY, v[i].id, v[i].routing) == v[i].shard,
                      "%s/%s", v[i].routing, v[i].id);
}
END_TEST

START_TEST(test_default_routing_shards)
{
    ck_assert_int_eq(esbulk_default_routing_shards(1), 1024);
    ck_assert_int_eq(esbulk_default_routing_shards(2), 1024);
    ck_assert_int_eq(esbulk_default_routing_shards(3), 768);
    ck_assert_int_eq(esbulk_default_routing_shards(5), 640);
    ck_assert_int_eq(esbulk_default_routing_shards(6), 768);
    ck_assert_int_eq(esbulk_default_routing_shards(7), 896);
    ck_assert_int_eq(esbulk_default_routing_shards(8), 1024);
    ck_assert_int_eq(esbulk_default_routing_shards(12), 768);
    ck_assert_int_eq(esbulk_default_routing_shards(30), 960);
    ck_assert_int_eq(esbulk_default_routing_shards(512), 1024);  /* shift floor of 1 */
    ck_assert_int_eq(esbulk_default_routing_shards(1024), 2048);
    ck_assert_int_eq(esbulk_default_routing_shards(0), 0);
    ck_assert_int_eq(esbulk_default_routing_shards(-3), 0);
}
END_TEST

/* The mod function ignores routing_num_shards: floorMod(hash, shards). */
START_TEST(test_mod_function)
{
    int32_t hash;
    int n;

    /* "hello" hashes negative: floorMod must give a non-negative shard. */
    ck_assert_int_eq(esbulk_route_hash("hello", 5, &hash), ESBULK_OK);
    for (n = 1; n <= 30; n++) {
        int32_t want = ((hash % n) + n) % n;
        ck_assert_int_eq(shard_of(n, 0, 1, ESBULK_ROUTE_MOD, "hello", NULL), want);
        ck_assert_int_eq(shard_of(n, 0, 1, ESBULK_ROUTE_MOD, "x", "hello"), want);
    }
    /* Differs from the legacy function for some ids (6 shards, 768). */
    {
        int diff = 0;
        char id[16];
        for (n = 0; n < 100; n++) {
            snprintf(id, sizeof(id), "id%d", n);
            diff += shard_of(6, 0, 1, ESBULK_ROUTE_MOD, id, NULL) !=
                    shard_of(6, 0, 1, ESBULK_ROUTE_LEGACY, id, NULL);
        }
        ck_assert_int_gt(diff, 0);
    }
}
END_TEST

/* One row of tests/data/route_vectors.tsv ("shards routing_shards partition
 * shard id_hex routing_hex", computed by the server's own OperationRouting);
 * 0 at the end of the file. */
typedef struct {
    int shards, rs, part, want;
    char id[2048], routing[2048];
    size_t idlen, rlen;
} vec_t;

static void unhex(const char *hex, char *out, size_t *len)
{
    size_t i;

    *len = 0;
    for (i = 0; hex[i] && hex[i + 1]; i += 2) {
        unsigned v;
        sscanf(hex + i, "%2x", &v);
        out[(*len)++] = (char)v;
    }
}

static int next_vector(FILE *f, vec_t *v)
{
    char line[8192], idhex[4096], rhex[4096];
    int fields;

    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#')
            continue;
        rhex[0] = '\0';
        fields = sscanf(line, "%d\t%d\t%d\t%d\t%4095s\t%4095s", &v->shards, &v->rs, &v->part,
                        &v->want, idhex, rhex);
        ck_assert_msg(fields >= 5, "bad line: %s", line);
        if (strcmp(rhex, "-") == 0)
            rhex[0] = '\0';
        unhex(idhex, v->id, &v->idlen);
        unhex(rhex, v->routing, &v->rlen);
        return 1;
    }
    return 0;
}

static FILE *open_vectors(void)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/tests/data/route_vectors.tsv",
             getenv("top_srcdir") ? getenv("top_srcdir") : ".");
    f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    return f;
}

static int32_t vector_shard(const vec_t *v)
{
    esbulk_layout_t *l = esbulk_layout_new();
    int32_t got = -1;

    esbulk_layout_set_shards(l, v->shards);
    esbulk_layout_set_routing_shards(l, v->rs);
    esbulk_layout_set_partition_size(l, v->part);
    ck_assert_int_eq(esbulk_layout_shard(l, v->id, v->idlen, v->routing, v->rlen, &got),
                     ESBULK_OK);
    esbulk_layout_destroy(l);
    return got;
}

/* hash(routing) + offset wraps around like Java int addition: the server's
 * answers for routing values that hash within the partition size of
 * INT32_MAX, with routing shards that are not a power of two (768, 640),
 * where a sum kept in 64 bits lands on another shard. */
START_TEST(test_partition_overflow)
{
    static const char routing[] = "r8868765";
    int32_t hash;
    int rows = 0, wrapped = 0, differs = 0;
    FILE *f = open_vectors();
    vec_t v;

    /* the hash function itself near the edge (murmur3_vectors.tsv checks it widely) */
    ck_assert_int_eq(esbulk_route_hash(routing, strlen(routing), &hash), ESBULK_OK);
    ck_assert_int_eq(hash, INT32_MAX - 44);
    while (next_vector(f, &v)) {
        int32_t id_hash, rh;
        int64_t sum, rs = v.rs;

        if (v.part <= 1 || v.rlen == 0)
            continue;
        ck_assert_int_eq(esbulk_route_hash(v.routing, v.rlen, &rh), ESBULK_OK);
        ck_assert_int_eq(esbulk_route_hash(v.id, v.idlen, &id_hash), ESBULK_OK);
        if ((int64_t)rh < (int64_t)INT32_MAX - v.part + 1)
            continue;
        rows++;
        sum = (int64_t)rh + ((id_hash % v.part) + v.part) % v.part;
        if (sum > INT32_MAX) {
            wrapped++;
            /* without the wraparound the shard would be this one */
            differs += (int)(((sum % rs) + rs) % rs / (rs / v.shards)) != v.want;
        }
        ck_assert_msg(vector_shard(&v) == v.want, "id %.*s routing %.*s: got %d, server %d",
                      (int)v.idlen, v.id, (int)v.rlen, v.routing, vector_shard(&v), v.want);
    }
    fclose(f);
    /* the file must keep enough rows that tell the two sums apart */
    ck_assert_int_ge(rows, 120);
    ck_assert_msg(wrapped >= 20 && differs >= 10, "%d rows wrap, %d would differ", wrapped,
                  differs);
}
END_TEST

START_TEST(test_errors)
{
    esbulk_layout_t *l = esbulk_layout_new();
    int32_t s;

    ck_assert_int_eq(esbulk_layout_set_shards(l, 0), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_layout_set_routing_shards(l, -1), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_layout_set_partition_size(l, 0), ESBULK_ERR_INVALID_ARG);
    ck_assert_int_eq(esbulk_layout_set_function(l, (esbulk_route_fn_t)7), ESBULK_ERR_INVALID_ARG);
    /* neither id nor routing */
    ck_assert_int_eq(esbulk_layout_shard(l, NULL, 0, NULL, 0, &s), ESBULK_ERR_INVALID_ARG);
    /* routing shards not a multiple of shards */
    esbulk_layout_set_shards(l, 3);
    esbulk_layout_set_routing_shards(l, 8);
    ck_assert_int_eq(esbulk_layout_shard(l, "a", 1, NULL, 0, &s), ESBULK_ERR_INVALID_ARG);
    esbulk_layout_set_routing_shards(l, 0);
    ck_assert_int_eq(esbulk_layout_routing_shards(l), 768);
    /* invalid UTF-8 in id or routing */
    ck_assert_int_eq(esbulk_layout_shard(l, "\xff", 1, NULL, 0, &s), ESBULK_ERR_INVALID_UTF8);
    ck_assert_int_eq(esbulk_layout_shard(l, "a", 1, "\xc0\x80", 2, &s), ESBULK_ERR_INVALID_UTF8);
    /* partitioned with a routing needs an id */
    esbulk_layout_set_partition_size(l, 2);
    ck_assert_int_eq(esbulk_layout_shard(l, NULL, 0, "r", 1, &s), ESBULK_ERR_INVALID_ARG);
    /* an empty routing counts as none: same shard as the id alone */
    {
        int32_t a, b;
        esbulk_layout_set_partition_size(l, 1);
        ck_assert_int_eq(esbulk_layout_shard(l, "doc1", 4, "", 0, &a), ESBULK_OK);
        ck_assert_int_eq(esbulk_layout_shard(l, "doc1", 4, NULL, 0, &b), ESBULK_OK);
        ck_assert_int_eq(a, b);
    }
    esbulk_layout_destroy(l);
}
END_TEST

/* tests/data/route_vectors.tsv: "shards routing_shards partition shard
 * id_hex routing_hex", computed by the server's own OperationRouting. */
/* The prepared divisions (the placement hint's, on every add) give the
 * shard the reference's divisions give, for every hash tried: the edges,
 * a stride across all 2^32 and random ones, on layouts of either function
 * with shard counts from 1 to 1024, routing_num_shards by default and set,
 * and divisors of every size up to INT32_MAX. The comparisons are plain
 * (each ck_assert is a write to Check's pipe): one assertion at the end
 * names the first mismatch. */
#define PREPARED_HASHES 6000
START_TEST(test_prepared_divisions)
{
    static const int32_t shards[] = {1, 2, 3, 5, 6, 7, 8, 12, 30, 64, 100, 640, 1000, 1024};
    static const int32_t set_rs[] = {0, 1, 3, 7, 1024, 65535, 1 << 20, INT32_MAX};
    static const int32_t edges[] = {0, 1, -1, 2, -2, INT32_MAX, INT32_MIN, INT32_MAX - 1,
                                    INT32_MIN + 1, 767, 768, -768, 1 << 30, -(1 << 30)};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t a, b, k, checked = 0, prepared = 0, wrong = 0;
    char first[160] = "";

    for (a = 0; a < sizeof(shards) / sizeof(shards[0]); a++) {
        for (b = 0; b < sizeof(set_rs) / sizeof(set_rs[0]); b++) {
            int fn;

            for (fn = 0; fn < 2; fn++) {
                esbulk_layout_t *l = esbulk_layout_new();
                esbulk__shard_div_t d;
                int32_t rs = set_rs[b] == 1 ? shards[a] * 3 : set_rs[b], want, got;
                esbulk_err_t err;

                ck_assert_ptr_nonnull(l);
                ck_assert_int_eq(esbulk_layout_set_shards(l, shards[a]), ESBULK_OK);
                ck_assert_int_eq(esbulk_layout_set_routing_shards(l, rs), ESBULK_OK);
                ck_assert_int_eq(esbulk_layout_set_function(l, fn ? ESBULK_ROUTE_MOD
                                                                  : ESBULK_ROUTE_LEGACY),
                                 ESBULK_OK);
                esbulk__shard_div_init(&d, l);
                err = esbulk__layout_shard_of_hash(l, 0, &want);
                /* prepared exactly when the reference takes the layout */
                ck_assert_int_eq(d.ok, err == ESBULK_OK);
                if (!d.ok) {
                    esbulk_layout_destroy(l);
                    continue;
                }
                prepared++;
                for (k = 0; k < PREPARED_HASHES; k++) {
                    int32_t h;

                    if (k < sizeof(edges) / sizeof(edges[0])) {
                        h = edges[k];
                    } else if (k < PREPARED_HASHES / 2) {
                        /* across the range, 2^32 / 3000 apart */
                        h = (int32_t)(uint32_t)(k * 1431655u);
                    } else {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        h = (int32_t)(uint32_t)(x >> 16);
                    }
                    if (esbulk__layout_shard_of_hash(l, h, &want) != ESBULK_OK)
                        want = -1;
                    got = esbulk__shard_div(&d, h);
                    if (got != want && wrong++ == 0)
                        snprintf(first, sizeof(first),
                                 "shards %d routing_shards %d fn %d hash %d: %d, not %d",
                                 (int)shards[a], (int)rs, fn, (int)h, (int)got, (int)want);
                    checked++;
                }
                esbulk_layout_destroy(l);
            }
        }
    }
    ck_assert_msg(wrong == 0, "%zu of %zu differ; the first: %s", wrong, checked, first);
    ck_assert_uint_gt(prepared, 100);
    ck_assert_uint_eq(checked, prepared * PREPARED_HASHES);
    /* a partitioned layout is not prepared: it needs two hashes */
    {
        esbulk_layout_t *l = esbulk_layout_new();
        esbulk__shard_div_t d;

        ck_assert_ptr_nonnull(l);
        ck_assert_int_eq(esbulk_layout_set_shards(l, 6), ESBULK_OK);
        ck_assert_int_eq(esbulk_layout_set_partition_size(l, 2), ESBULK_OK);
        esbulk__shard_div_init(&d, l);
        ck_assert_int_eq(d.ok, 0);
        esbulk_layout_destroy(l);
    }
}
END_TEST

START_TEST(test_server_vectors)
{
    FILE *f = open_vectors();
    int n = 0;
    vec_t v;

    while (next_vector(f, &v)) {
        int32_t got = vector_shard(&v);

        ck_assert_msg(got == v.want, "row %d: %d shards, rs %d, p %d: got %d want %d", n,
                      v.shards, v.rs, v.part, got, v.want);
        n++;
    }
    fclose(f);
    ck_assert_int_ge(n, 500);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("route");
    TCase *tc = tcase_create("core");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_bwc_terms);
    tcase_add_test(tc, test_partitioned_shrunk);
    tcase_add_test(tc, test_partitioned_bwc);
    tcase_add_test(tc, test_default_routing_shards);
    tcase_add_test(tc, test_mod_function);
    tcase_add_test(tc, test_partition_overflow);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_server_vectors);
    tcase_add_test(tc, test_prepared_divisions);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
