/* esbulk load's internals: what its files share (the options and counters of
 * one run, the record each document carries, a failure to report) and the
 * calls they make of one another. One thread runs them all (the log
 * callbacks aside: esbulk_load.c). */
#ifndef ESBULK_LOAD_INT_H
#define ESBULK_LOAD_INT_H

#include "../common/awscreds.h"
#include "../common/logonce.h"

#include <esbulk.h>

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define EXIT_USAGE 2
#define MAX_URLS 64
#define MAX_SETS 128
#define MAX_HEADERS 64
#define SHOWN_FAILURES 20  /* failures printed in detail on stderr */
#define LOG_REPEAT_NS (60 * 1000000000LL) /* a library message said again after */
#define POLL_EVERY 1000    /* lines between esbulk_poll(eb, 0) calls */
#define PROGRESS_NS 250000000LL

#define LOAD_USAGE \
    "usage: esbulk load [OPTIONS] [FILE ...]\n" \
    "Try 'esbulk load --help' for more information.\n"

typedef enum { FMT_AUTO, FMT_NDJSON, FMT_BULK } format_t;

/* A bulk action's options, as esbulk_docopts_t takes them. Kept apart from
 * the library's object, which cannot be read back: the failures file writes
 * them into the document's action line. */
typedef struct {
    int64_t version, if_seq_no, if_primary_term;
    int32_t retry_on_conflict; /* -1: none */
    uint8_t version_type;      /* 0: no version, else an esbulk_version_type_t */
    uint8_t has_seq_no, require_alias;
    const char *pipeline;      /* NUL-terminated; NULL: none */
} aopts_t;

/* What each accepted document carries as doc_opaque until its result. */
typedef struct {
    uint64_t line;
    uint64_t bytes;    /* input bytes it accounts for (progress) */
    uint32_t input;    /* index into load_t.inputs */
    uint8_t op;
    uint8_t has_body;  /* body kept (only with --failed) */
    uint8_t has_opts;  /* options kept (only with --failed, when there are any) */
    uint32_t index_len, id_len, routing_len, body_len;
    char data[];       /* index \0 id \0 routing \0 body \0 [aopts_t pipeline \0] */
} rec_t;

/* A failure to report (from a result or from a refusal at add time). */
typedef struct {
    uint32_t input;
    uint64_t line;
    int op;            /* -1: not a document (a broken action line) */
    int no_pair;       /* not written to the failures file (no document to re-run) */
    json_t *raw_action; /* non-NULL: written as the action line instead of one made
                        * of the fields below (an action load refused) */
    const aopts_t *opts; /* NULL: none */
    const char *index; /* as given (the failures file); NULL: none */
    const char *result_index;
    const char *id;
    size_t id_len;
    const char *routing;
    size_t routing_len;
    const char *body;
    size_t body_len;
    int32_t status;
    const char *error_type;
    const char *reason;
    esbulk_err_t err;
    int possibly;
} failure_t;

/* A parsed bulk action line. Strings point into root (or the buffers). */
typedef struct {
    json_t *root;
    int big_int; /* the line holds an integer past int64, read as a real */
    esbulk_op_t op;
    const char *index, *id, *routing;
    size_t id_len, routing_len;
    char idbuf[32], routingbuf[32];
    aopts_t opts;
    char why[256];     /* non-empty: the document fails for this reason */
    uint64_t line, bytes;
} action_t;

typedef struct {
    /* options */
    format_t format;
    const char *index;
    esbulk_op_t op;
    const char *id_field, *routing_field;
    const char *failed_path;
    int quiet, show_stats;
    int gen_ids;       /* id.generate is not "none" */
    /* inputs */
    char **inputs;
    int ninputs;
    uint64_t total_bytes; /* 0: unknown */
    /* the engine */
    esbulk_t *eb;
    esbulk_docopts_t *docopts; /* for every document with options, cleared each time */
    /* counters */
    uint64_t lines_read, bytes_read; /* input consumed, all inputs (progress) */
    uint64_t read_docs, added, indexed, failed, possibly;
    uint64_t bytes_done; /* input bytes of documents with a result, and blank lines */
    uint64_t failures_shown, failures_total;
    uint64_t unpaired; /* failures in the reasons file only (no document to re-run) */
    /* outputs */
    FILE *failed_fp, *reasons_fp;
    char *reasons_path;
    int write_error;
    /* progress */
    int progress;
    struct timespec t0;
    int64_t last_progress_ns;
    int progress_shown;
    const esbulk_conf_t *conf; /* what start_engine() makes the handle from */
    awscreds_t *aws;           /* --aws-region: the credentials, kept fresh */
    int engine_failed;         /* start_engine() could not make it (said) */
    logonce_t logs;            /* the library's messages said lately (on_log; under
                                * stderr's lock) */
    /* where reading stopped (the message after an interruption) */
    uint32_t at_input;
    uint64_t at_line;
    /* one-time warnings */
    int warned_id_type, warned_routing_type, warned_ignored_key;
    /* scratch for decoded field values */
    char *scratch;
    size_t scratch_cap;
} load_t;

/* load_input.c: reading the inputs, adding their documents */
extern volatile sig_atomic_t interrupted;
int start_engine(load_t *L);
int op_from_name(const char *s, esbulk_op_t *op);
int load_input(load_t *L, uint32_t input, FILE *fp);

/* load_report.c: results, the --failed files, the summary */
const char *input_name(const load_t *L, uint32_t i);
const char *op_name(int op);
int aopts_empty(const aopts_t *o);
void report_failure(load_t *L, const failure_t *f);
rec_t *rec_new(load_t *L, uint32_t input, uint64_t line, uint64_t bytes, esbulk_op_t op,
               const char *index, const char *id, size_t id_len, const char *routing,
               size_t routing_len, const char *body, size_t body_len,
               const aopts_t *opts);
void on_result(esbulk_t *eb, const esbulk_result_t *result, void *opaque);
void fail_line(load_t *L, uint32_t input, uint64_t line, uint64_t bytes, int op,
               const action_t *a, const char *why, const char *body, size_t body_len,
               int pair);
void print_summary(load_t *L, json_t *stats, double el);

/* load_progress.c: the progress line, the statistics */
int64_t now_ns(void);
double elapsed_s(const load_t *L);
void clear_progress(load_t *L);
void show_progress(load_t *L, int force);
int64_t jint(json_t *o, const char *key);
void print_node_stats(json_t *stats);

#endif
