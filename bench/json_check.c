/* body.validate's syntax check (lib/json.c) against the jansson parse it
 * replaced (json_loadb with JSON_REJECT_DUPLICATES, then json_decref), on
 * three shapes of documents: micro.c's ~200-byte log line, a row as
 * esbulk-mysql builds it, and a 200 KB array of objects. CPU time of this
 * thread (a loaded machine's waits left out), the median of 5 interleaved
 * rounds of each. All numbers fit int64 and a double: jansson takes them.
 *
 *     make bench-programs && bench/json_check */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "json.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 5

static double cpu_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void bench(const char *name, const char *doc, size_t len, long iters)
{
    double ours[ROUNDS], theirs[ROUNDS];
    int r;

    for (r = 0; r < ROUNDS; r++) {
        double t0, t1, t2;
        long i;

        t0 = cpu_now();
        for (i = 0; i < iters; i++)
            if (esbulk__json_check(doc, len, NULL, NULL) != ESBULK_OK)
                abort();
        t1 = cpu_now();
        for (i = 0; i < iters; i++) {
            json_t *j = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);

            if (j == NULL)
                abort();
            json_decref(j);
        }
        t2 = cpu_now();
        ours[r] = (t1 - t0) / (double)iters * 1e9;
        theirs[r] = (t2 - t1) / (double)iters * 1e9;
    }
    qsort(ours, ROUNDS, sizeof(double), cmp_double);
    qsort(theirs, ROUNDS, sizeof(double), cmp_double);
    printf("%-26s %7zu B  check %9.0f ns  jansson %9.0f ns  %5.1fx\n", name, len,
           ours[ROUNDS / 2], theirs[ROUNDS / 2], theirs[ROUNDS / 2] / ours[ROUNDS / 2]);
}

int main(void)
{
    static const char log[] =
        "{\"ts\":\"2024-05-03T04:05:06.789Z\",\"host\":\"web-07\",\"level\":\"info\","
        "\"user\":\"user-01234\",\"latency_ms\":123,\"path\":\"/api/v1/items/98765\","
        "\"status\":200,\"bytes\":4567,\"msg\":\"GET items list ok cache hit\"}";
    static const char row[] =
        "{\"id\":123456,\"u\":9223372036854775807,\"s\":-9223372036854775807,"
        "\"d\":\"12345678901234567890.123456789\",\"name\":\"caf\xc3\xa9 \\u00e9t\xc3\xa9\","
        "\"created\":\"2024-05-03T04:05:06.789000+00:00\",\"ok\":true,\"n\":null,"
        "\"j\":{\"a\":[1,2,3,{\"b\":1.5e10}],\"c\":\"x\"}}";
    static char big[200000];
    size_t o = 0;
    int i;

    o += (size_t)snprintf(big, sizeof(big), "{\"items\":[");
    for (i = 0; o < sizeof(big) - 200; i++)
        o += (size_t)snprintf(big + o, sizeof(big) - o,
                              "%s{\"k\":%d,\"name\":\"item number %d with some text\","
                              "\"v\":[%d.5,%d,-%d]}",
                              i ? "," : "", i, i, i, i * 3, i * 7);
    o += (size_t)snprintf(big + o, sizeof(big) - o, "]}");
    bench("log line (micro.c)", log, sizeof(log) - 1, 1000000);
    bench("esbulk-mysql row", row, sizeof(row) - 1, 1000000);
    bench("200 KB array of objects", big, o, 1000);
    return 0;
}
