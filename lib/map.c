/* A string-keyed hash table of pointers. */
#include "map.h"

#include <stdlib.h>
#include <string.h>

uint32_t esbulk__map_hash(const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    while (*key)
        h = (h ^ (unsigned char)*key++) * 16777619u;
    return h;
}

void *esbulk__map_get(const esbulk__map_t *m, const char *key)
{
    uint32_t h;
    esbulk__map_ent_t *e;

    if (m->nb == 0)
        return NULL;
    h = esbulk__map_hash(key);
    for (e = m->b[h & (m->nb - 1)]; e != NULL; e = e->next)
        if (e->hash == h && strcmp(e->key, key) == 0)
            return e->val;
    return NULL;
}

static esbulk_err_t grow(esbulk__map_t *m)
{
    size_t nb = m->nb ? m->nb * 2 : 16, i;
    esbulk__map_ent_t **b = calloc(nb, sizeof(*b)), *e, *next;

    if (b == NULL)
        return ESBULK_ERR_NOMEM;
    for (i = 0; i < m->nb; i++) {
        for (e = m->b[i]; e != NULL; e = next) {
            next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return ESBULK_OK;
}

esbulk_err_t esbulk__map_put(esbulk__map_t *m, const char *key, void *val)
{
    esbulk__map_ent_t *e;

    if (m->n >= m->nb && grow(m) != ESBULK_OK && m->nb == 0)
        return ESBULK_ERR_NOMEM; /* a table that cannot grow still works, slower */
    if ((e = malloc(sizeof(*e))) == NULL)
        return ESBULK_ERR_NOMEM;
    e->key = key;
    e->hash = esbulk__map_hash(key);
    e->val = val;
    e->next = m->b[e->hash & (m->nb - 1)];
    m->b[e->hash & (m->nb - 1)] = e;
    m->n++;
    return ESBULK_OK;
}

void *esbulk__map_del(esbulk__map_t *m, const char *key)
{
    esbulk__map_ent_t **pp, *e;
    uint32_t h;
    void *val;

    if (m->nb == 0)
        return NULL;
    h = esbulk__map_hash(key);
    for (pp = &m->b[h & (m->nb - 1)]; (e = *pp) != NULL; pp = &e->next) {
        if (e->hash == h && strcmp(e->key, key) == 0) {
            *pp = e->next;
            val = e->val;
            free(e);
            m->n--;
            return val;
        }
    }
    return NULL;
}

void esbulk__map_free(esbulk__map_t *m)
{
    size_t i;
    esbulk__map_ent_t *e, *next;

    for (i = 0; i < m->nb; i++)
        for (e = m->b[i]; e != NULL; e = next) {
            next = e->next;
            free(e);
        }
    free(m->b);
    m->b = NULL;
    m->nb = m->n = 0;
}
