/* Shared by the integration tests: PASS/FAIL reporting and a small admin
 * client (the tests' own, independent of the library) for the real cluster. */
#ifndef ESBULK_IT_COMMON_H
#define ESBULK_IT_COMMON_H

#include <esbulk.h>
#include <jansson.h>

extern const char *base_url; /* the cluster's HTTP address */
extern int passed, failed;

/* One check: prints PASS/FAIL with the message and counts it. */
void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A fatal failure: prints it, the totals, and exits 1. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* A request to base_url; returns the decoded JSON (NULL if none). */
json_t *req(const char *method, const char *path, const char *body, long *status);
/* A request that must answer 2xx (else die). */
json_t *must(const char *method, const char *path, const char *body);
void must_ok(const char *method, const char *path, const char *body);
void wait_green(void);
/* Prints the totals line and returns the exit status. */
int finish(void);

/* Per-document bookkeeping of results, indexed by the document's opaque (a
 * small integer): how many results each got, and the last one's fields. */
typedef struct {
    int results;
    esbulk_outcome_t outcome;
    esbulk_err_t err;
    int32_t status, attempts;
    char error_type[64];
    char reason[512];
    char id[64];
    char result[16];
    int64_t seq_no, version;
} seen_t;

extern seen_t *seen;
extern size_t nseen;
/* Forgets everything and makes room for n documents. */
void seen_reset(size_t n);
/* Records r under its opaque; a result whose opaque is past nseen (not a
 * document of the test) is a failed check. */
void seen_record(const esbulk_result_t *r);

/* Results of seen[from..to): how many did not get exactly one, how many
 * have each outcome, how many closed (ESBULK_ERR_CLOSED), how many needed
 * more than one attempt. */
typedef struct {
    size_t not_once, indexed, failed, possibly, closed, retried;
} tally_t;
tally_t seen_tally(size_t from, size_t to);

#endif
