/*
 * MySQL/MariaDB values, as the text protocol returns them, to JSON: the
 * type mapping documented in esbulk-mysql(1) ("TYPE MAPPING"). Plain code
 * over plain data: no I/O.
 */
#include "esm.h"
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int esm_json_string(esm_buf_t *out, const char *s, size_t len)
{
    if (!esbulk__utf8_valid(s, len))
        return -1;
    esm_buf_unbounded(out);
    return esbulk__json_string(out, s, len) == ESBULK_OK ? 0 : -1;
}

static int base64(esm_buf_t *out, const unsigned char *s, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (esm_buf_reserve(out, (len + 2) / 3 * 4 + 2))
        return -1;
    char *o = out->data + out->len;
    *o++ = '"';
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < len) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o++ = '"';
    out->len = (size_t)(o - out->data);
    out->data[out->len] = '\0';
    return 0;
}

/* A JSON number as MySQL prints it: [-]digits[.digits][e[+-]digits]. */
static int json_number(const char *v, size_t len)
{
    size_t i = 0;
    if (i < len && v[i] == '-')
        i++;
    size_t d = i;
    while (i < len && v[i] >= '0' && v[i] <= '9')
        i++;
    if (i == d || (v[d] == '0' && i - d > 1))
        return 0;
    if (i < len && v[i] == '.') {
        size_t f = ++i;
        while (i < len && v[i] >= '0' && v[i] <= '9')
            i++;
        if (i == f)
            return 0;
    }
    if (i < len && (v[i] == 'e' || v[i] == 'E')) {
        i++;
        if (i < len && (v[i] == '+' || v[i] == '-'))
            i++;
        size_t e = i;
        while (i < len && v[i] >= '0' && v[i] <= '9')
            i++;
        if (i == e)
            return 0;
    }
    return i == len;
}

/* 1 when v holds only '0' digits in its date part (0000-00-00, or a month
 * or day of 0: not a calendar date). */
static int zero_date(const char *v, size_t len)
{
    if (len < 10)
        return 1;
    return (v[5] == '0' && v[6] == '0') || (v[8] == '0' && v[9] == '0') ||
           !memcmp(v, "0000", 4);
}

int esm_value_json(esm_buf_t *out, esm_kind_t kind, const char *v, size_t len,
                   const esm_map_opts_t *opts, char *why, size_t why_size)
{
    if (!v)
        return esm_buf_add(out, "null", 4);
    switch (kind) {
    case ESM_K_INT:
        if (!json_number(v, len))
            break;
        return esm_buf_add(out, v, len);
    case ESM_K_BOOL:
        if (len == 1 && v[0] == '0')
            return esm_buf_add(out, "false", 5);
        return esm_buf_add(out, "true", 4);
    case ESM_K_FLOAT:
        if (!json_number(v, len))
            break; /* no NaN or infinity in JSON */
        return esm_buf_add(out, v, len);
    case ESM_K_DECIMAL:
        if (opts->decimal_number) {
            if (!json_number(v, len))
                break;
            return esm_buf_add(out, v, len);
        }
        return esm_json_string(out, v, len);
    case ESM_K_YEAR:
        if (len == 4 && !memcmp(v, "0000", 4))
            return esm_buf_add(out, "null", 4);
        if (!json_number(v, len))
            break;
        return esm_buf_add(out, v, len);
    case ESM_K_DATE:
        if (zero_date(v, len))
            return esm_buf_add(out, "null", 4);
        return esm_json_string(out, v, len);
    case ESM_K_DATETIME: {
        /* "YYYY-MM-DD HH:MM:SS[.ffffff]" -> "YYYY-MM-DDTHH:MM:SS[.ffffff]+HH:MM" */
        if (zero_date(v, len))
            return esm_buf_add(out, "null", 4);
        if (len < 19 || len > 26 || v[10] != ' ')
            break;
        char tmp[40];
        memcpy(tmp, v, len);
        tmp[10] = 'T';
        size_t tzlen = strlen(opts->tz);
        memcpy(tmp + len, opts->tz, tzlen);
        return esm_json_string(out, tmp, len + tzlen);
    }
    case ESM_K_TIME:
    case ESM_K_ENUM:
    case ESM_K_TEXT:
        if (esm_json_string(out, v, len) == 0)
            return 0;
        snprintf(why, why_size, "invalid UTF-8");
        return -1;
    case ESM_K_BIT: {
        if (len > 8)
            break;
        uint64_t n = 0;
        for (size_t i = 0; i < len; i++)
            n = n << 8 | (unsigned char)v[i];
        char num[24];
        int k = snprintf(num, sizeof(num), "%llu", (unsigned long long)n);
        return esm_buf_add(out, num, (size_t)k);
    }
    case ESM_K_SET: {
        if (esm_buf_addc(out, '['))
            return -1;
        size_t start = 0;
        for (size_t i = 0; len && i <= len; i++) {
            if (i == len || v[i] == ',') {
                if (start && esm_buf_addc(out, ','))
                    return -1;
                if (esm_json_string(out, v + start, i - start)) {
                    snprintf(why, why_size, "invalid UTF-8");
                    return -1;
                }
                start = i + 1;
            }
        }
        return esm_buf_addc(out, ']');
    }
    case ESM_K_JSON:
        /* MariaDB keeps JSON as text checked by json_valid(); invalid
         * UTF-8 in it still breaks the document. */
        if (!esbulk__utf8_valid(v, len)) {
            snprintf(why, why_size, "invalid UTF-8");
            return -1;
        }
        if (len == 0)
            return esm_buf_add(out, "null", 4);
        return esm_buf_add(out, v, len);
    case ESM_K_BINARY:
        return base64(out, (const unsigned char *)v, len);
    }
    snprintf(why, why_size, "value \"%.*s\" does not map to JSON", (int)(len > 40 ? 40 : len), v);
    return -1;
}

/* A string for a dead-letter line: valid UTF-8 as it is, invalid bytes as
 * U+FFFD (the line must stay JSON); NULL as null. */
static int dl_string(esm_buf_t *out, const char *s, size_t len)
{
    if (!s)
        return esm_buf_add(out, "null", 4);
    if (esbulk__utf8_valid(s, len))
        return esm_json_string(out, s, len);
    esm_buf_t fixed = {0};
    const unsigned char *p = (const unsigned char *)s;
    int rc = 0;
    for (size_t i = 0; i < len && !rc;) {
        size_t n = esbulk__utf8_seq(p + i, len - i);
        rc = n ? esm_buf_add(&fixed, s + i, n) : esm_buf_add(&fixed, "\xef\xbf\xbd", 3);
        i += n ? n : 1;
    }
    if (!rc)
        rc = esm_json_string(out, fixed.data ? fixed.data : "", fixed.len);
    esm_buf_free(&fixed);
    return rc;
}

int esm_dead_letter_line(esm_buf_t *out, const char *phase, const char *table,
                         const char *index, const char *id, const char *reason, int32_t status,
                         const char *error_type, const char *body, size_t body_len)
{
    char num[16];
    int rc = esm_buf_adds(out, "{\"phase\":") || dl_string(out, phase, strlen(phase)) ||
             esm_buf_adds(out, ",\"table\":") ||
             dl_string(out, table, table ? strlen(table) : 0) ||
             esm_buf_adds(out, ",\"index\":") ||
             dl_string(out, index, index ? strlen(index) : 0) ||
             esm_buf_adds(out, ",\"id\":") || dl_string(out, id, id ? strlen(id) : 0) ||
             esm_buf_adds(out, ",\"reason\":") ||
             dl_string(out, reason ? reason : "unknown", strlen(reason ? reason : "unknown")) ||
             esm_buf_adds(out, ",\"status\":");
    if (rc)
        return -1;
    if (status > 0) {
        snprintf(num, sizeof(num), "%d", (int)status);
        rc = esm_buf_adds(out, num);
    } else {
        rc = esm_buf_adds(out, "null");
    }
    if (rc || esm_buf_adds(out, ",\"error_type\":") ||
        dl_string(out, error_type, error_type ? strlen(error_type) : 0) ||
        esm_buf_adds(out, ",\"doc\":"))
        return -1;
    if (!body || !body_len) {
        rc = esm_buf_add(out, "null", 4);
    } else if (esbulk__json_check(body, body_len, NULL, NULL) == ESBULK_OK) {
        /* the document as it was built, byte for byte (its numbers as their
         * digits: a parse and a dump would round or refuse big ones); a raw
         * CR or LF in valid JSON is white space, and the line must stay one */
        size_t start = out->len;
        rc = esm_buf_add(out, body, body_len);
        for (size_t i = start; !rc && i < out->len; i++)
            if (out->data[i] == '\n' || out->data[i] == '\r')
                out->data[i] = ' ';
    } else {
        /* not one valid JSON object (why it was refused): its text */
        rc = dl_string(out, body, body_len);
    }
    return rc || esm_buf_add(out, "}\n", 2) ? -1 : 0;
}

/* --poll-column's document versions (poll.c). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

int64_t esm_poll_version(const char *v, size_t len)
{
    /* YYYY-MM-DD[ HH:MM:SS[.ffffff]] */
    if (!v || len < 10)
        return 0;
    char b[40];
    if (len >= sizeof(b))
        len = sizeof(b) - 1;
    memcpy(b, v, len);
    b[len] = '\0';
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    char frac[8] = "";
    int n = sscanf(b, "%4d-%2d-%2d %2d:%2d:%2d.%6[0-9]", &y, &mo, &d, &h, &mi, &s, frac);
    if (n < 3 || mo < 1 || mo > 12 || d < 1 || d > 31)
        return 0;
    int64_t us = 0;
    if (n >= 7) {
        size_t fl = strlen(frac);
        us = strtoll(frac, NULL, 10);
        for (size_t i = fl; i < 6; i++)
            us *= 10;
    }
    int64_t secs = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
    int64_t ver = secs * 1000000 + us;
    return ver < 0 ? 0 : ver;
}
