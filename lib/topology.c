/* The topology object: the cluster view and the index entries a handle (or
 * esbulk_topology_new's caller) keeps, re-read when stale, one cluster read
 * at a time, and the public esbulk_topology_* calls over it. The reads
 * themselves are topology_read.c's. */
#include "topology_int.h"

#include <stdlib.h>
#include <string.h>

void esbulk__topology_set_log(esbulk_topology_t *topo, const esbulk__log_t *log)
{
    topo->log = *log;
}

esbulk__http_opts_t *esbulk__topology_http(esbulk_topology_t *topo)
{
    return &topo->http;
}

esbulk_topology_t *esbulk_topology_new(const esbulk_conf_t *conf, char *errstr,
                                       size_t errstr_size)
{
    esbulk_topology_t *topo;
    char *user = NULL, *pass = NULL;

    if (conf == NULL) {
        esbulk__errstr(errstr, errstr_size, "conf must not be NULL");
        return NULL;
    }
    topo = calloc(1, sizeof(*topo));
    if (topo == NULL) {
        esbulk__errstr(errstr, errstr_size, "out of memory");
        return NULL;
    }
    if (esbulk__urls_parse(esbulk__conf_str(conf, ESBULK__C_URLS), &topo->seeds, &topo->nseeds,
                           &user, &pass, errstr, errstr_size) != ESBULK_OK)
        goto fail;
    if ((topo->seed_down = calloc((size_t)topo->nseeds, sizeof(*topo->seed_down))) == NULL) {
        esbulk__errstr(errstr, errstr_size, "out of memory");
        goto fail;
    }
    if (esbulk__http_opts_init(&topo->http, conf, user, pass, errstr, errstr_size) != ESBULK_OK)
        goto fail;
    if (pthread_mutex_init(&topo->lock, NULL) != 0) {
        esbulk__errstr(errstr, errstr_size, "pthread_mutex_init failed");
        esbulk__http_opts_free(&topo->http);
        goto fail;
    }
    if (pthread_cond_init(&topo->cluster_cond, NULL) != 0) {
        esbulk__errstr(errstr, errstr_size, "pthread_cond_init failed");
        pthread_mutex_destroy(&topo->lock);
        esbulk__http_opts_free(&topo->http);
        goto fail;
    }
    topo->discovery = (int)esbulk__conf_int(conf, ESBULK__C_TOPOLOGY_DISCOVERY);
    topo->refresh_ms = esbulk__conf_int(conf, ESBULK__C_TOPOLOGY_REFRESH_MS);
    topo->log.cb = conf->log_cb;
    topo->log.opaque = conf->opaque;
    topo->log.level = (int32_t)esbulk__conf_int(conf, ESBULK__C_LOG_LEVEL);
    esbulk__wipe_str(pass);
    free(user);
    free(pass);
    return topo;
fail:
    esbulk__wipe_str(pass);
    free(user);
    free(pass);
    esbulk__urls_free(topo->seeds, topo->nseeds);
    free(topo->seed_down);
    free(topo);
    return NULL;
}

void esbulk_topology_destroy(esbulk_topology_t *topo)
{
    int i;

    if (topo == NULL)
        return;
    for (i = 0; i < topo->nindices; i++)
        esbulk__index_release(topo->indices[i]);
    free(topo->indices);
    esbulk__cluster_release(topo->cluster);
    esbulk__urls_free(topo->seeds, topo->nseeds);
    esbulk__http_opts_free(&topo->http);
    pthread_cond_destroy(&topo->cluster_cond);
    pthread_mutex_destroy(&topo->lock);
    free(topo->seed_down);
    free(topo);
}

static int stale(const esbulk_topology_t *topo, int64_t fetched_ms, int64_t now, int unknown)
{
    if (unknown)
        return now - fetched_ms >= ESBULK__UNKNOWN_RECHECK_MS;
    return topo->refresh_ms > 0 && now - fetched_ms >= topo->refresh_ms;
}

/* Under topo->lock: the last cluster read's failure, as its error. */
static esbulk_err_t cluster_failure(const esbulk_topology_t *topo, char *errstr,
                                    size_t errstr_size)
{
    esbulk__errstr(errstr, errstr_size, "%s", topo->cluster_fail_msg);
    return topo->cluster_fail_err;
}

/* One read at a time: several topology workers start at once and each
 * asks, and every one of them used to read the cluster (2 to 4 reads at
 * every start). A caller that finds a read in flight waits for it and
 * takes its outcome (ESBULK__CLUSTER_AFTER, whose reason may be newer than
 * that read, the outcome of the next). */
esbulk_err_t esbulk__topology_get_cluster(esbulk_topology_t *topo, esbulk__cluster_fresh_t fresh,
                                          esbulk__cluster_t **out, char *errstr,
                                          size_t errstr_size)
{
    int force = fresh != ESBULK__CLUSTER_CACHED;
    esbulk__cluster_t *c;
    esbulk_err_t err;
    uint64_t since, mine;

    pthread_mutex_lock(&topo->lock);
    /* a read numbered above since will do: begun after this call, or (JOIN)
     * in flight at it */
    since = topo->cluster_reads;
    if (fresh == ESBULK__CLUSTER_JOIN && topo->cluster_reading)
        since--;
    for (;;) {
        if (force && topo->cluster_done > since) {
            /* such a read has ended: its outcome */
            err = topo->cluster_done_ok ? ESBULK_OK : cluster_failure(topo, errstr, errstr_size);
            if (err == ESBULK_OK)
                *out = esbulk__cluster_ref(topo->cluster);
            pthread_mutex_unlock(&topo->lock);
            return err;
        }
        if (!force && topo->cluster != NULL &&
            !stale(topo, topo->cluster_fetched_ms, esbulk__now_ms(), 0)) {
            *out = esbulk__cluster_ref(topo->cluster);
            pthread_mutex_unlock(&topo->lock);
            return ESBULK_OK;
        }
        if (!force && topo->cluster_fail_ms != 0 &&
            esbulk__now_ms() - topo->cluster_fail_ms < ESBULK__CLUSTER_RETRY_MS) {
            /* a cluster that just failed to answer is not asked again at once */
            err = cluster_failure(topo, errstr, errstr_size);
            pthread_mutex_unlock(&topo->lock);
            return err;
        }
        if (!topo->cluster_reading)
            break;
        pthread_cond_wait(&topo->cluster_cond, &topo->lock);
    }
    topo->cluster_reading = 1;
    mine = ++topo->cluster_reads;
    pthread_mutex_unlock(&topo->lock);
    err = esbulk__topology_read_cluster(topo, &c, errstr, errstr_size);
    pthread_mutex_lock(&topo->lock);
    if (err != ESBULK_OK) {
        topo->cluster_fail_ms = esbulk__now_ms();
        topo->cluster_fail_err = err;
        snprintf(topo->cluster_fail_msg, sizeof(topo->cluster_fail_msg), "%s",
                 errstr != NULL && errstr_size > 0 ? errstr : esbulk_err2str(err));
    } else {
        topo->cluster_fail_ms = 0;
        esbulk__cluster_release(topo->cluster);
        topo->cluster = esbulk__cluster_ref(c);
        topo->cluster_fetched_ms = esbulk__now_ms();
        *out = c;
    }
    topo->cluster_done = mine;
    topo->cluster_done_ok = err == ESBULK_OK;
    topo->cluster_reading = 0;
    pthread_cond_broadcast(&topo->cluster_cond);
    pthread_mutex_unlock(&topo->lock);
    return err;
}

/* Stores e as the entry for its name, replacing an older one. */
static esbulk_err_t store_index(esbulk_topology_t *topo, esbulk__index_t *e)
{
    esbulk__index_t **grown;
    int i;

    pthread_mutex_lock(&topo->lock);
    for (i = 0; i < topo->nindices; i++) {
        if (strcmp(topo->indices[i]->name, e->name) == 0) {
            esbulk__index_release(topo->indices[i]);
            topo->indices[i] = e;
            atomic_fetch_add(&e->refs, 1);
            pthread_mutex_unlock(&topo->lock);
            return ESBULK_OK;
        }
    }
    grown = realloc(topo->indices, sizeof(*grown) * (size_t)(topo->nindices + 1));
    if (grown == NULL) {
        pthread_mutex_unlock(&topo->lock);
        return ESBULK_ERR_NOMEM;
    }
    topo->indices = grown;
    topo->indices[topo->nindices++] = e;
    atomic_fetch_add(&e->refs, 1);
    pthread_mutex_unlock(&topo->lock);
    return ESBULK_OK;
}

static void remember_failure(esbulk_topology_t *topo, const char *name, esbulk_err_t err,
                             const char *why);

/* Fetches index name against the current cluster; refetches the cluster once
 * when a primary sits on a node it does not know yet. */
static esbulk_err_t load_index(esbulk_topology_t *topo, const char *name, int force_cluster,
                               int store, esbulk__index_t **out, char *errstr,
                               size_t errstr_size)
{
    esbulk__cluster_t *c = NULL;
    esbulk__index_t *e = NULL;
    esbulk_err_t err;
    int attempt, missing = 0;

    for (attempt = 0; attempt < 2; attempt++) {
        err = esbulk__topology_get_cluster(topo, force_cluster || attempt > 0
                                                     ? ESBULK__CLUSTER_AFTER
                                                     : ESBULK__CLUSTER_CACHED,
                                           &c, errstr, errstr_size);
        if (err != ESBULK_OK)
            return err;
        err = esbulk__topology_read_index(topo, c, name, &e, &missing, errstr, errstr_size);
        esbulk__cluster_release(c);
        if (err != ESBULK_OK) {
            if (store)
                remember_failure(topo, name, err, errstr);
            return err;
        }
        if (!missing)
            break;
        if (attempt == 0)
            esbulk__index_release(e);
    }
    if (!store) {
        *out = e;
        return ESBULK_OK;
    }
    err = store_index(topo, e);
    if (err != ESBULK_OK) {
        esbulk__index_release(e);
        return err;
    }
    *out = e;
    return ESBULK_OK;
}

esbulk_err_t esbulk__topology_get_index(esbulk_topology_t *topo, const char *name,
                                        esbulk__index_t **entry, char *errstr,
                                        size_t errstr_size)
{
    esbulk__index_t *e = NULL;
    int i;

    pthread_mutex_lock(&topo->lock);
    for (i = 0; i < topo->nindices; i++) {
        if (strcmp(topo->indices[i]->name, name) == 0) {
            e = topo->indices[i];
            break;
        }
    }
    if (e != NULL && !stale(topo, e->fetched_ms, esbulk__now_ms(),
                            e->state == ESBULK__IDX_UNKNOWN || e->state == ESBULK__IDX_ERROR)) {
        if (e->state == ESBULK__IDX_ERROR) {
            /* a fetch that just failed is not repeated for every document */
            esbulk_err_t err = e->error;
            esbulk__errstr(errstr, errstr_size, "%s", e->reason ? e->reason : esbulk_err2str(err));
            pthread_mutex_unlock(&topo->lock);
            return err;
        }
        atomic_fetch_add(&e->refs, 1);
        pthread_mutex_unlock(&topo->lock);
        *entry = e;
        return ESBULK_OK;
    }
    pthread_mutex_unlock(&topo->lock);
    return load_index(topo, name, 0, 1, entry, errstr, errstr_size);
}

/* Remembers that fetching name failed: an older good entry is kept (and
 * asked again in ESBULK__UNKNOWN_RECHECK_MS), else an error entry stands in. */
static void remember_failure(esbulk_topology_t *topo, const char *name, esbulk_err_t err,
                             const char *why)
{
    int64_t now = esbulk__now_ms();
    esbulk__index_t *e;
    int i;

    pthread_mutex_lock(&topo->lock);
    for (i = 0; i < topo->nindices; i++) {
        e = topo->indices[i];
        if (strcmp(e->name, name) == 0 && e->state != ESBULK__IDX_ERROR) {
            e->fetched_ms = topo->refresh_ms > ESBULK__UNKNOWN_RECHECK_MS
                                ? now - topo->refresh_ms + ESBULK__UNKNOWN_RECHECK_MS : now;
            pthread_mutex_unlock(&topo->lock);
            return;
        }
    }
    pthread_mutex_unlock(&topo->lock);
    if (err == ESBULK_ERR_NOMEM || err == ESBULK_ERR_INVALID_ARG ||
        (e = esbulk__index_new(name)) == NULL)
        return;
    e->state = ESBULK__IDX_ERROR;
    e->error = err;
    e->reason = why ? esbulk__strdup(why) : NULL;
    e->fetched_ms = now;
    if (store_index(topo, e) != ESBULK_OK) {
        esbulk__index_release(e);
        return;
    }
    esbulk__index_release(e);
}

esbulk_err_t esbulk__topology_fetch_index(esbulk_topology_t *topo, const char *name,
                                          esbulk__index_t **entry, char *errstr,
                                          size_t errstr_size)
{
    *entry = NULL;
    return load_index(topo, name, 0, 0, entry, errstr, errstr_size);
}

esbulk_err_t esbulk_topology_refresh(esbulk_topology_t *topo, char *errstr, size_t errstr_size)
{
    esbulk__cluster_t *c;
    esbulk_err_t err;
    char **names;
    int i, n;

    if (topo == NULL)
        return ESBULK_ERR_INVALID_ARG;
    err = esbulk__topology_get_cluster(topo, ESBULK__CLUSTER_AFTER, &c, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    esbulk__cluster_release(c);
    pthread_mutex_lock(&topo->lock);
    n = topo->nindices;
    names = calloc((size_t)n + 1, sizeof(*names));
    for (i = 0; names != NULL && i < n; i++)
        names[i] = esbulk__strdup(topo->indices[i]->name);
    pthread_mutex_unlock(&topo->lock);
    if (names == NULL)
        return ESBULK_ERR_NOMEM;
    for (i = 0; i < n && err == ESBULK_OK; i++) {
        esbulk__index_t *e;

        if (names[i] == NULL) {
            err = ESBULK_ERR_NOMEM;
            break;
        }
        err = load_index(topo, names[i], 0, 1, &e, errstr, errstr_size);
        if (err == ESBULK_OK)
            esbulk__index_release(e);
    }
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return err;
}

esbulk_err_t esbulk_topology_route(esbulk_topology_t *topo, const char *index, const char *id,
                                   size_t id_len, const char *routing, size_t routing_len,
                                   int32_t *shard, char *node, size_t node_size, char *errstr,
                                   size_t errstr_size)
{
    esbulk__index_t *e;
    esbulk_err_t err;
    int32_t p;

    if (topo == NULL || index == NULL || shard == NULL || (id == NULL && id_len > 0) ||
        (routing == NULL && routing_len > 0)) {
        esbulk__errstr(errstr, errstr_size, "invalid argument");
        return ESBULK_ERR_INVALID_ARG;
    }
    if (node != NULL && node_size > 0)
        node[0] = '\0';
    err = esbulk__topology_get_index(topo, index, &e, errstr, errstr_size);
    if (err != ESBULK_OK)
        return err;
    if (e->state != ESBULK__IDX_OK) {
        esbulk__errstr(errstr, errstr_size, "%s: %s", index, e->reason);
        err = e->state == ESBULK__IDX_UNKNOWN ? ESBULK_ERR_UNKNOWN_INDEX : ESBULK_ERR_NOT_ROUTABLE;
        goto out;
    }
    if (e->alias_routing != NULL) {
        if (routing_len > 0 && (strlen(e->alias_routing) != routing_len ||
                                memcmp(e->alias_routing, routing, routing_len) != 0)) {
            esbulk__errstr(errstr, errstr_size,
                           "alias %s has index_routing; a different routing is rejected", index);
            err = ESBULK_ERR_ROUTING_CONFLICT;
            goto out;
        }
        routing = e->alias_routing;
        routing_len = strlen(routing);
    }
    err = esbulk_layout_shard(&e->layout, id, id_len, routing, routing_len, shard);
    if (err != ESBULK_OK) {
        esbulk__errstr(errstr, errstr_size, "%s: %s", index,
                       err == ESBULK_ERR_INVALID_UTF8 ? "id or routing is not valid UTF-8"
                                                      : "a document needs an _id or a routing");
        goto out;
    }
    p = e->primary != NULL ? e->primary[*shard] : -1;
    if (node != NULL && node_size > 0 && p >= 0)
        snprintf(node, node_size, "%s", e->cluster->nodes[p].name);
out:
    esbulk__index_release(e);
    return err;
}

char *esbulk_topology_describe(esbulk_topology_t *topo, const char *index, char *errstr,
                               size_t errstr_size)
{
    esbulk__cluster_t *c = NULL;
    esbulk__index_t *e = NULL;
    json_t *root = NULL, *ij;
    char *out = NULL;

    if (topo == NULL) {
        esbulk__errstr(errstr, errstr_size, "invalid argument");
        return NULL;
    }
    if (index != NULL &&
        esbulk__topology_get_index(topo, index, &e, errstr, errstr_size) != ESBULK_OK)
        return NULL;
    if (e != NULL)
        c = esbulk__cluster_ref(e->cluster);
    else if (esbulk__topology_get_cluster(topo, ESBULK__CLUSTER_CACHED, &c, errstr,
                                          errstr_size) != ESBULK_OK)
        return NULL;
    root = esbulk__cluster_json(c);
    if (root != NULL && e != NULL) {
        ij = esbulk__index_json(e);
        if (ij == NULL || json_object_set_new(root, "index", ij) != 0) {
            json_decref(root);
            root = NULL;
        }
    }
    if (root != NULL)
        out = json_dumps(root, JSON_COMPACT);
    if (out == NULL)
        esbulk__errstr(errstr, errstr_size, "out of memory");
    json_decref(root);
    esbulk__index_release(e);
    esbulk__cluster_release(c);
    return out;
}
