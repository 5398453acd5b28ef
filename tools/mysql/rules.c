/*
 * Decisions of esbulk-mysql that need no server: what a result means for a
 * row, and whether a statement in the binary log changed rows of a followed
 * table without row events. Plain code over plain data: no I/O (unit tested
 * in tests/check_mysql_map.c).
 */
#include "esm.h"

#include <string.h>
#include <strings.h>

esm_result_class_t esm_result_class(esbulk_outcome_t outcome, esbulk_err_t err, int32_t status,
                                    const char *error_type)
{
    if (outcome == ESBULK_OUTCOME_INDEXED)
        return ESM_RESULT_DONE;
    if (outcome == ESBULK_OUTCOME_POSSIBLY)
        return ESM_RESULT_UNAVAILABLE; /* sent again by the next run */
    if (err == ESBULK_ERR_ITEM) {
        /* the index holds a newer version of the row (a replay). A delete
         * of a document that is not there is indexed (the library's
         * "not_found"), so a 404 here is an error: no such index */
        if (status == 409)
            return ESM_RESULT_SUPERSEDED;
        /* the index's state, not the document: missing (auto-creation
         * off), closed, or blocked for writes */
        if (error_type != NULL && (strcmp(error_type, "index_not_found_exception") == 0 ||
                                   strcmp(error_type, "index_closed_exception") == 0 ||
                                   strcmp(error_type, "cluster_block_exception") == 0))
            return ESM_RESULT_UNAVAILABLE;
        /* not allowed to write there (a security plugin's per-index rights):
         * the job's credentials, not the row */
        if (status == 401 || status == 403)
            return ESM_RESULT_UNAVAILABLE;
        return status >= 400 && status < 500 && status != 429 && status != 408
                   ? ESM_RESULT_REFUSED
                   : ESM_RESULT_UNAVAILABLE;
    }
    /* a 413 for a request of this one document (the library splits a 413
     * until the document is alone): the server refuses the document for
     * itself, larger than its http.max_content_length, on every run. A 400
     * for a whole request stays a stop: it may be the request's fault (a
     * parameter the server does not know), which would refuse every row */
    if (err == ESBULK_ERR_HTTP && status == 413)
        return ESM_RESULT_REFUSED;
    return err == ESBULK_ERR_INVALID_JSON || err == ESBULK_ERR_DOC_TOO_LARGE ||
                   err == ESBULK_ERR_NOT_ROUTABLE || err == ESBULK_ERR_ROUTING_CONFLICT
               ? ESM_RESULT_REFUSED
               : ESM_RESULT_UNAVAILABLE;
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int ident_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           c == '_' || c == '$' || c >= 0x80;
}

/* The index of the first byte from i that is not blank or in a comment
 * (n when there is none). */
static size_t skip_blank(const char *s, size_t n, size_t i)
{
    while (i < n) {
        if (blank(s[i])) {
            i++;
        } else if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
            for (i += 2; i < n && !(s[i] == '*' && i + 1 < n && s[i + 1] == '/'); i++)
                ;
            i = i < n ? i + 2 : n;
        } else if (s[i] == '#' || (i + 2 < n && s[i] == '-' && s[i + 1] == '-' && blank(s[i + 2]))) {
            const char *nl = memchr(s + i, '\n', n - i);
            i = nl != NULL ? (size_t)(nl - s) + 1 : n;
        } else {
            break;
        }
    }
    return i;
}

int esm_stmt_is_dml(const char *s, size_t n)
{
    static const char *const words[] = {"INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD"};
    size_t i = skip_blank(s, n, 0), k = i;

    while (k < n && ident_char((unsigned char)s[k]))
        k++;
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
        if (strlen(words[w]) == k - i && strncasecmp(s + i, words[w], k - i) == 0)
            return 1;
    return 0;
}

/* The name at s[*i] (a bare word, or a name in backquotes, `` inside it
 * one `) into w, at most size bytes: its whole length (more than size when
 * it was cut); *i past it. */
static size_t read_name(const char *s, size_t n, size_t *i, char *w, size_t size)
{
    size_t k = 0, j = *i;

    if (j < n && s[j] == '`') {
        for (j++; j < n; j++) {
            if (s[j] == '`') {
                if (j + 1 < n && s[j + 1] == '`')
                    j++;
                else
                    break;
            }
            if (k < size)
                w[k] = s[j];
            k++;
        }
        j++;
    } else {
        for (; j < n && ident_char((unsigned char)s[j]); j++, k++)
            if (k < size)
                w[k] = s[j];
    }
    *i = j;
    return k;
}

static int same(const char *a, size_t alen, const char *b)
{
    return strlen(b) == alen && strncasecmp(a, b, alen) == 0;
}

int esm_stmt_names(const char *s, size_t n, const char *evdb, size_t evdb_len, const char *db,
                   const char *name)
{
    /* the identifier before, when a '.' follows it */
    char prev[256], cur[256];
    size_t prev_len = 0, i = 0;
    int qualified = 0; /* cur follows "prev." */
    int db_is_default = evdb != NULL && same(evdb, evdb_len, db);

    while ((i = skip_blank(s, n, i)) < n) {
        size_t cur_len = 0;
        char c = s[i];

        if (c == '\'' || c == '"') {
            /* a string: not a name ('' or \' inside it) */
            for (i++; i < n; i++) {
                if (s[i] == '\\') {
                    i++;
                } else if (s[i] == c) {
                    if (i + 1 < n && s[i + 1] == c)
                        i++;
                    else
                        break;
                }
            }
            i++;
            prev_len = 0;
            qualified = 0;
            continue;
        }
        if (c == '.') {
            qualified = prev_len > 0;
            i++;
            continue;
        }
        if (c != '`' && !ident_char((unsigned char)c)) {
            i++;
            prev_len = 0;
            qualified = 0;
            continue;
        }
        cur_len = read_name(s, n, &i, cur, sizeof(cur));
        if (cur_len >= sizeof(cur)) { /* longer than any name */
            prev_len = 0;
            qualified = 0;
            continue;
        }
        if (qualified ? same(prev, prev_len, db) && same(cur, cur_len, name)
                      : db_is_default && same(cur, cur_len, name))
            return 1;
        memcpy(prev, cur, cur_len);
        prev_len = cur_len;
        qualified = 0;
    }
    return 0;
}

/* The next word of s from *i (a bare word, or a name in backquotes) into
 * w (at most size - 1 bytes, NUL-terminated; longer words cut): its
 * length, or 0 at anything else (then *i is past that one byte). */
static size_t next_word(const char *s, size_t n, size_t *i, char *w, size_t size)
{
    size_t k, j = skip_blank(s, n, *i);
    int quoted = j < n && s[j] == '`';

    if (!quoted && (j >= n || !ident_char((unsigned char)s[j]))) {
        *i = j < n ? j + 1 : j;
        w[0] = '\0';
        return 0;
    }
    *i = j;
    k = read_name(s, n, i, w, size - 1);
    w[k < size - 1 ? k : size - 1] = '\0';
    return k > 0 ? k : (size_t)quoted; /* `` is a (strange) name too */
}

static int word_is(const char *w, const char *kw)
{
    return strcasecmp(w, kw) == 0;
}

int esm_stmt_removes_rows(const char *s, size_t n, const char *evdb, size_t evdb_len,
                          const char *db, const char *name)
{
    char w[256], prev[256] = "";
    size_t i = 0;

    if (!next_word(s, n, &i, w, sizeof(w)))
        return 0;
    if (word_is(w, "DROP")) {
        next_word(s, n, &i, w, sizeof(w));
        if (word_is(w, "DATABASE") || word_is(w, "SCHEMA")) {
            next_word(s, n, &i, w, sizeof(w));
            if (word_is(w, "IF")) { /* IF EXISTS */
                next_word(s, n, &i, w, sizeof(w));
                next_word(s, n, &i, w, sizeof(w));
            }
            return word_is(w, db);
        }
        /* DROP TABLE, not DROP TEMPORARY TABLE (never a followed one) */
        return word_is(w, "TABLE") && esm_stmt_names(s, n, evdb, evdb_len, db, name);
    }
    if (word_is(w, "TRUNCATE")) /* TRUNCATE [TABLE] name */
        return esm_stmt_names(s, n, evdb, evdb_len, db, name);
    if (word_is(w, "RENAME")) /* from its name, or to it */
        return next_word(s, n, &i, w, sizeof(w)) && word_is(w, "TABLE") &&
               esm_stmt_names(s, n, evdb, evdb_len, db, name);
    if (word_is(w, "CREATE")) { /* CREATE OR REPLACE TABLE */
        return next_word(s, n, &i, w, sizeof(w)) && word_is(w, "OR") &&
               next_word(s, n, &i, w, sizeof(w)) && word_is(w, "REPLACE") &&
               next_word(s, n, &i, w, sizeof(w)) && word_is(w, "TABLE") &&
               esm_stmt_names(s, n, evdb, evdb_len, db, name);
    }
    if (word_is(w, "ALTER") && esm_stmt_names(s, n, evdb, evdb_len, db, name)) {
        /* ... DROP, TRUNCATE or EXCHANGE PARTITION: rows gone, or swapped
         * in, with no row events */
        while (i < n) {
            if (!next_word(s, n, &i, w, sizeof(w))) {
                prev[0] = '\0';
                continue;
            }
            if (word_is(w, "PARTITION") &&
                (word_is(prev, "DROP") || word_is(prev, "TRUNCATE") || word_is(prev, "EXCHANGE")))
                return 1;
            memcpy(prev, w, sizeof(prev));
        }
    }
    return 0;
}

int esm_enum_index(const char *column_type, const char *value)
{
    const char *p = column_type;
    size_t vlen = strlen(value);
    int index = 0;

    if (strncasecmp(p, "enum(", 5) != 0)
        return 0;
    for (p += 5; *p == '\''; ) {
        /* one quoted member: '' inside it is one ' */
        size_t k = 0;
        int same = 1;

        p++;
        index++;
        for (;; p++) {
            if (*p == '\0')
                return 0;
            if (*p == '\'') {
                if (p[1] != '\'')
                    break;
                p++;
            }
            same = same && k < vlen && value[k] == *p;
            k++;
        }
        if (same && k == vlen)
            return index;
        p++; /* the closing quote */
        if (*p == ',')
            p++;
    }
    return 0;
}
