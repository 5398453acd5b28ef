/* esbulk load: bulk-load NDJSON or _bulk-format files through libesbulk. */
#ifndef ESBULK_LOAD_H
#define ESBULK_LOAD_H

/* Runs "esbulk load". argv[0] is "load"; the options and files follow.
 * Returns the exit status: 0 every document indexed, 1 some failed or are
 * possibly indexed (or a runtime error), 2 bad usage. */
int esbulk_cmd_load(int argc, char **argv);

#endif
