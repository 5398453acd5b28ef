/*
 * The configuration file of esbulk-mysql (see esbulk-mysql(1)):
 *
 *   # comment
 *   [shop.orders]              one section per table: [database.table] or [table]
 *   index   = orders           the target index, alias or data stream (required)
 *   columns = id, total, customer_id AS customer   (optional: default every column)
 *   id      = id               (optional: default the primary key)
 */
#define _XOPEN_SOURCE 700
#include "esm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int valid_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '$' || (unsigned char)*s >= 0x80))
            return 0;
    return 1;
}

/* Splits a comma-separated list into trimmed, malloc'ed words. */
static int split_list(char *value, char ***out, int *n)
{
    *out = NULL;
    *n = 0;
    for (char *tok = strtok(value, ","); tok; tok = strtok(NULL, ",")) {
        char **grown = realloc(*out, sizeof(char *) * (size_t)(*n + 1));
        if (!grown)
            return -1;
        *out = grown;
        (*out)[(*n)++] = strdup(trim(tok));
    }
    return 0;
}

int esm_config_load(esm_config_t *cfg, const char *path, const char *default_db, char *err,
                    size_t err_size)
{
    memset(cfg, 0, sizeof(*cfg));
    FILE *fp = fopen(path, "r");
    if (!fp) {
        snprintf(err, err_size, "%s: cannot open", path);
        return -1;
    }
    char line[4096];
    int lineno = 0, rc = -1;
    esm_table_conf_t *t = NULL;
    while (fgets(line, sizeof(line), fp)) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *e = strchr(s, ']');
            if (!e || trim(e + 1)[0]) {
                snprintf(err, err_size, "%s:%d: a section is [database.table]", path, lineno);
                goto out;
            }
            *e = '\0';
            char *name = trim(s + 1);
            char *dot = strchr(name, '.');
            const char *db = default_db;
            if (dot) {
                *dot = '\0';
                db = name;
                name = dot + 1;
            }
            if (!db || !valid_name(db) || !valid_name(name)) {
                snprintf(err, err_size,
                         "%s:%d: [%s]: a table is [database.table] (or [table] with --database)",
                         path, lineno, name);
                goto out;
            }
            for (int i = 0; i < cfg->ntables; i++)
                if (!strcmp(cfg->tables[i].db, db) && !strcmp(cfg->tables[i].table, name)) {
                    snprintf(err, err_size, "%s:%d: table %s.%s configured twice", path, lineno,
                             db, name);
                    goto out;
                }
            esm_table_conf_t *grown =
                realloc(cfg->tables, sizeof(*grown) * (size_t)(cfg->ntables + 1));
            if (!grown)
                goto nomem;
            cfg->tables = grown;
            t = &cfg->tables[cfg->ntables++];
            memset(t, 0, sizeof(*t));
            t->db = strdup(db);
            t->table = strdup(name);
            t->line = lineno;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, err_size, "%s:%d: expected KEY = VALUE", path, lineno);
            goto out;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        if (!t) {
            snprintf(err, err_size, "%s:%d: %s outside a [table] section", path, lineno, key);
            goto out;
        }
        if (!strcmp(key, "index")) {
            if (!*value) {
                snprintf(err, err_size, "%s:%d: empty index", path, lineno);
                goto out;
            }
            free(t->index);
            t->index = strdup(value);
        } else if (!strcmp(key, "columns")) {
            char **words;
            int n;
            if (split_list(value, &words, &n))
                goto nomem;
            t->columns = calloc((size_t)n, sizeof(*t->columns));
            t->ncolumns = n;
            for (int i = 0; i < n; i++) {
                /* "col", "col AS field" or "col:field" */
                char *w = words[i], *field = NULL;
                char *as = strstr(w, " AS ");
                if (!as)
                    as = strstr(w, " as ");
                if (as) {
                    *as = '\0';
                    field = trim(as + 4);
                } else if ((as = strchr(w, ':'))) {
                    *as = '\0';
                    field = trim(as + 1);
                }
                char *col = trim(w);
                if (!valid_name(col) || (field && !*field)) {
                    snprintf(err, err_size, "%s:%d: bad column \"%s\"", path, lineno, col);
                    for (int j = i; j < n; j++)
                        free(words[j]);
                    free(words);
                    goto out;
                }
                t->columns[i].column = strdup(col);
                t->columns[i].field = strdup(field ? field : col);
                free(w);
            }
            free(words);
        } else if (!strcmp(key, "id")) {
            if (split_list(value, &t->id, &t->nid))
                goto nomem;
            for (int i = 0; i < t->nid; i++)
                if (!valid_name(t->id[i])) {
                    snprintf(err, err_size, "%s:%d: bad id column \"%s\"", path, lineno,
                             t->id[i]);
                    goto out;
                }
        } else {
            snprintf(err, err_size, "%s:%d: unknown key \"%s\" (index, columns, id)", path,
                     lineno, key);
            goto out;
        }
    }
    if (cfg->ntables == 0) {
        snprintf(err, err_size, "%s: no [table] section", path);
        goto out;
    }
    for (int i = 0; i < cfg->ntables; i++)
        if (!cfg->tables[i].index) {
            snprintf(err, err_size, "%s:%d: [%s.%s] has no index", path, cfg->tables[i].line,
                     cfg->tables[i].db, cfg->tables[i].table);
            goto out;
        }
    rc = 0;
    goto out;
nomem:
    snprintf(err, err_size, "out of memory");
out:
    fclose(fp);
    if (rc)
        esm_config_free(cfg);
    return rc;
}

void esm_config_free(esm_config_t *cfg)
{
    for (int i = 0; i < cfg->ntables; i++) {
        esm_table_conf_t *t = &cfg->tables[i];
        free(t->db);
        free(t->table);
        free(t->index);
        for (int j = 0; j < t->ncolumns; j++) {
            free(t->columns[j].column);
            free(t->columns[j].field);
        }
        free(t->columns);
        for (int j = 0; j < t->nid; j++)
            free(t->id[j]);
        free(t->id);
    }
    free(cfg->tables);
    memset(cfg, 0, sizeof(*cfg));
}
