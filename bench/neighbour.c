/*
 * neighbour - a CPU neighbour for the cluster: spends a duty cycle of CPU
 * beside a contender, to measure what a client's own CPU costs the cluster
 * on a machine they share (bench/ab.py runs it beside bench/limit).
 *
 * usage: neighbour spin|stream BUSY_US PERIOD_US SECONDS [MIB]
 *
 * Every PERIOD_US it works for BUSY_US, then sleeps: "spin" only computes,
 * "stream" reads and writes one cache line after another of a MIB-sized
 * buffer (default 48), as a client walking its records would. It stops
 * after SECONDS and prints the CPU seconds it spent. Exit status 2 on a
 * usage error.
 */
#define _GNU_SOURCE 1

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char usage[] = "usage: neighbour spin|stream BUSY_US PERIOD_US SECONDS [MIB]\n";

int main(int argc, char **argv)
{
    int stream;
    double busy, period, seconds, t0;
    size_t words = 0, pos = 0, i;
    uint64_t *buf = NULL, acc = 1;
    struct rusage ru;

    if (argc < 5 || argc > 6 || (strcmp(argv[1], "spin") != 0 && strcmp(argv[1], "stream") != 0)) {
        fputs(usage, stderr);
        return 2;
    }
    stream = strcmp(argv[1], "stream") == 0;
    busy = atof(argv[2]) * 1e-6;
    period = atof(argv[3]) * 1e-6;
    seconds = atof(argv[4]);
    if (busy <= 0 || period < busy || seconds <= 0) {
        fputs(usage, stderr);
        return 2;
    }
    if (stream) {
        long mib = argc == 6 ? atol(argv[5]) : 48;

        if (mib < 1 || mib > 4096) {
            fputs(usage, stderr);
            return 2;
        }
        words = (size_t)mib << 17; /* MiB of 8-byte words */
        if ((buf = malloc(words * sizeof(*buf))) == NULL) {
            fputs("neighbour: out of memory\n", stderr);
            return 1;
        }
        for (i = 0; i < words; i++)
            buf[i] = i;
    }
    t0 = now_s();
    while (now_s() - t0 < seconds) {
        double start = now_s(), rest;

        while (now_s() - start < busy) {
            for (i = 0; i < 256; i++) {
                if (stream) {
                    acc += buf[pos];
                    buf[pos] = acc;
                    pos += 8; /* the next cache line */
                    if (pos >= words)
                        pos = 0;
                } else {
                    acc = acc * 6364136223846793005u + 1442695040888963407u;
                }
            }
        }
        rest = period - (now_s() - start);
        if (rest > 0) {
            struct timespec ts = {(time_t)rest, (long)((rest - (double)(time_t)rest) * 1e9)};

            nanosleep(&ts, NULL);
        }
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"cpu_s\":%.3f,\"check\":%u}\n",
           (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
           (unsigned)(acc & 1));
    free(buf);
    return 0;
}
