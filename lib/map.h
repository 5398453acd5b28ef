/* A string-keyed hash table of pointers (chained, grows by doubling). The
 * keys are the callers': an entry's key must live as long as the entry. */
#ifndef ESBULK_MAP_H
#define ESBULK_MAP_H

#include "common.h"

typedef struct esbulk__map_ent_s {
    const char *key;
    uint32_t hash;
    void *val;
    struct esbulk__map_ent_s *next;
} esbulk__map_ent_t;

typedef struct {
    esbulk__map_ent_t **b;
    size_t nb;      /* buckets, a power of two (0 before the first put) */
    size_t n;       /* entries */
} esbulk__map_t;

uint32_t esbulk__map_hash(const char *key);
/* The value stored under key, NULL if none. */
void *esbulk__map_get(const esbulk__map_t *m, const char *key);
/* Stores val under key (which must not be there yet). ESBULK_ERR_NOMEM on
 * failure (then m is unchanged). */
esbulk_err_t esbulk__map_put(esbulk__map_t *m, const char *key, void *val);
/* Removes key's entry; returns its value (NULL if none). */
void *esbulk__map_del(esbulk__map_t *m, const char *key);
void esbulk__map_free(esbulk__map_t *m); /* the entries, not the values */

#endif
