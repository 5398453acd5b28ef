/* The core's targets, the HTTP endpoints it sends to (discovered nodes and
 * seeds): which are up, which one a destination's next request goes to,
 * their latencies and per-node statistics. */
#include "core_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void esbulk__core_target_free(target_t *t)
{
    free(t->url);
    free(t->node_id);
    free(t->name);
    free(t);
}

static target_t *target_get(esbulk__core_t *c, const char *url, const char *node_id,
                            const char *name)
{
    target_t *t;

    for (t = c->targets; t != NULL; t = t->next)
        if (strcmp(t->url, url) == 0)
            break;
    if (t == NULL) {
        t = calloc(1, sizeof(*t));
        if (t == NULL || (t->url = esbulk__strdup(url)) == NULL) {
            free(t);
            return NULL;
        }
        t->next = c->targets;
        c->targets = t;
    }
    if (node_id != NULL && (t->node_id == NULL || strcmp(t->node_id, node_id) != 0)) {
        char *id = esbulk__strdup(node_id), *nm = esbulk__strdup(name ? name : node_id);
        if (id == NULL || nm == NULL) {
            free(id);
            free(nm);
            t->present = 1;
            return t;
        }
        free(t->node_id);
        free(t->name);
        t->node_id = id;
        t->name = nm;
    }
    t->present = 1;
    return t;
}

/* Targets that left the view and carry no request are freed. */
void esbulk__core_targets_prune(esbulk__core_t *c)
{
    target_t **pp = &c->targets, *t;

    while ((t = *pp) != NULL) {
        if (!t->present && t->inflight == 0) {
            *pp = t->next;
            esbulk__core_target_free(t);
        } else {
            pp = &t->next;
        }
    }
}

void esbulk__core_sync_targets(esbulk__core_t *c)
{
    target_t *t;
    int i;

    for (t = c->targets; t != NULL; t = t->next)
        t->present = 0;
    for (i = 0; i < c->nseeds; i++)
        target_get(c, c->seeds[i], NULL, NULL);
    if (c->cluster != NULL && !c->cluster->seeds_only)
        for (i = 0; i < c->cluster->nnodes; i++)
            if (c->cluster->nodes[i].http != NULL && c->cluster->nodes[i].reachable)
                target_get(c, c->cluster->nodes[i].http, c->cluster->nodes[i].id,
                           c->cluster->nodes[i].name);
    esbulk__core_targets_prune(c);
}

/* ulimit: at most this many of its requests may be unrouted ones (see
 * dest_target). */
static int target_usable(const esbulk__core_t *c, const target_t *t, int64_t now, int ulimit)
{
    return t->present && t->down_until <= now && t->inflight < c->cf.max_inflight &&
           t->inflight_unrouted < ulimit;
}

static target_t *target_by_node(esbulk__core_t *c, const char *node_id)
{
    target_t *t;

    for (t = c->targets; t != NULL; t = t->next)
        if (t->node_id != NULL && strcmp(t->node_id, node_id) == 0)
            return t;
    return NULL;
}

/* Any usable target, in turn. Discovered nodes are preferred over seeds
 * when the cluster view has them; a target that is down is used only when
 * every one is down (the request then tests whether it is back). */
static target_t *target_any(esbulk__core_t *c, int64_t now, int ulimit)
{
    target_t *t, *pick = NULL;
    unsigned n = 0, k;
    int want_nodes = c->cluster != NULL && !c->cluster->seeds_only;

    for (t = c->targets; t != NULL; t = t->next)
        if (target_usable(c, t, now, ulimit) && (!want_nodes || t->node_id != NULL))
            n++;
    if (n == 0 && want_nodes) {
        want_nodes = 0;
        for (t = c->targets; t != NULL; t = t->next)
            if (target_usable(c, t, now, ulimit))
                n++;
    }
    if (n == 0) {
        /* every one is down: try the one down longest (its documents back
         * off between attempts, so this does not spin) */
        for (t = c->targets; t != NULL; t = t->next)
            if (t->present && t->inflight < c->cf.max_inflight && t->inflight_unrouted < ulimit &&
                (pick == NULL || t->down_until < pick->down_until))
                pick = t;
        return pick;
    }
    k = c->rr++ % n;
    for (t = c->targets; t != NULL; t = t->next)
        if (target_usable(c, t, now, ulimit) && (!want_nodes || t->node_id != NULL) &&
            k-- == 0)
            return t;
    return NULL;
}

void esbulk__core_target_latency(target_t *t, int64_t ms)
{
    t->lat[t->latpos] = (int32_t)(ms > INT32_MAX ? INT32_MAX : ms < 0 ? 0 : ms);
    t->latpos = (t->latpos + 1) % LAT_RING;
    if (t->nlat < LAT_RING)
        t->nlat++;
}

void esbulk__core_mark_down(esbulk__core_t *c, target_t *t, const char *why, int64_t now)
{
    /* once per outage at warning level: a node down is tried again every
     * node.recheck.ms, and fails again until it is back */
    if (t->down_until <= now)
        esbulk__log(&c->log, t->down_said ? ESBULK_LOG_DEBUG : ESBULK_LOG_WARNING, "io",
                    "node %s is down (%s): re-routing", t->name ? t->name : t->url, why);
    t->down_said = 1;
    t->down_until = now + c->cf.recheck_ms;
    c->refresh_wanted = 1;
}

/* The target a destination's next request goes to, NULL if none is free.
 * Unrouted requests may hold all but one of a node's request slots while
 * routed documents are waiting: an unrouted request is often the one that
 * creates an index, which can take the server a second or more, and a node
 * whose every slot waits on that holds up the indices that exist. */
target_t *esbulk__core_dest_target(esbulk__core_t *c, dest_t *dest, int64_t now)
{
    target_t *t = NULL;
    int ulimit = INT_MAX;

    if (dest->kind == DEST_UNROUTED && c->active_routed > 0 && c->cf.max_inflight > 1)
        ulimit = c->cf.max_inflight - 1;
    if (dest->kind == DEST_NODE) {
        t = target_by_node(c, dest->node_id);
    } else if (dest->kind == DEST_SHARD) {
        const esbulk__index_t *e = dest->ix->e;

        if (e != NULL && e->state == ESBULK__IDX_OK && e->primary != NULL &&
            dest->shard < e->layout.shards && e->primary[dest->shard] >= 0 &&
            !e->cluster->seeds_only)
            t = target_by_node(c, e->cluster->nodes[e->primary[dest->shard]].id);
    }
    if (t != NULL && target_usable(c, t, now, ulimit))
        return t;
    if (t != NULL && t->present && t->down_until <= now)
        return NULL; /* its node is busy: wait for it rather than add a hop */
    return target_any(c, now, ulimit);
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

json_t *esbulk__core_node_stats(const esbulk__core_t *c, int64_t now)
{
    json_t *arr = json_array();
    const target_t *t;

    if (arr == NULL)
        return NULL;
    for (t = c->targets; t != NULL; t = t->next) {
        json_t *o = json_object(), *lat = json_object();
        size_t queued = 0;
        const dest_t *dest;

        if (o == NULL || lat == NULL) {
            json_decref(o);
            json_decref(lat);
            continue;
        }
        for (dest = c->dests; dest != NULL; dest = dest->next)
            if (dest->kind == DEST_NODE && t->node_id && strcmp(dest->node_id, t->node_id) == 0)
                queued += dest->q.count;
        json_object_set_new(o, "url", json_string(t->url));
        json_object_set_new(o, "name", t->name ? json_string(t->name) : json_null());
        json_object_set_new(o, "node_id", t->node_id ? json_string(t->node_id) : json_null());
        json_object_set_new(o, "seed", json_boolean(t->node_id == NULL));
        json_object_set_new(o, "queued_docs", json_integer((json_int_t)queued));
        json_object_set_new(o, "inflight", json_integer(t->inflight));
        json_object_set_new(o, "requests", json_integer((json_int_t)t->requests));
        json_object_set_new(o, "errors", json_integer((json_int_t)t->errors));
        json_object_set_new(o, "down", json_boolean(t->down_until > now));
        if (t->nlat > 0) {
            int32_t sorted[LAT_RING];
            memcpy(sorted, t->lat, sizeof(int32_t) * (size_t)t->nlat);
            qsort(sorted, (size_t)t->nlat, sizeof(int32_t), cmp_i32);
            json_object_set_new(lat, "p50", json_integer(sorted[(t->nlat - 1) * 50 / 100]));
            json_object_set_new(lat, "p95", json_integer(sorted[(t->nlat - 1) * 95 / 100]));
            json_object_set_new(lat, "p99", json_integer(sorted[(t->nlat - 1) * 99 / 100]));
        }
        json_object_set_new(o, "latency_ms", lat);
        json_array_append_new(arr, o);
    }
    return arr;
}
