/* A secret from a file, for the command-line tools (esbulk load,
 * esbulk-mysql): the command line is readable by every user of the
 * machine, a file is not (a secrets manager's, systemd's LoadCredential, a
 * container's mounted secret). Also the tools' wiping of secrets
 * (awscreds.c's credentials). Header only. */
#ifndef ESBULK_FIRSTLINE_H
#define ESBULK_FIRSTLINE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stores the compiler keeps: a secret about to be let go. */
static inline void firstline_wipe(char *p, size_t n)
{
    volatile char *v = p;

    while (n-- > 0)
        *v++ = '\0';
}

/* Wipes and frees s (NULL: nothing). */
static inline void firstline_free(char *s)
{
    if (s != NULL) {
        firstline_wipe(s, strlen(s));
        free(s);
    }
}

/* The first line of path, without its line break (CR LF or LF), into
 * *out (malloc'd; firstline_free it): 0, or -1 with the reason in err,
 * which names what (an option) and never holds the file's bytes. */
static inline int firstline_read(const char *what, const char *path, char **out, char *err,
                                 size_t err_size)
{
    FILE *f = fopen(path, "r");
    char buf[16384];
    size_t n;

    *out = NULL;
    if (f == NULL) {
        snprintf(err, err_size, "%s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if (fgets(buf, sizeof(buf), f) == NULL)
        buf[0] = '\0';
    fclose(f);
    n = strcspn(buf, "\r\n");
    if (n == sizeof(buf) - 1) {
        snprintf(err, err_size, "%s %s: the first line is over %zu bytes", what, path,
                 sizeof(buf) - 2);
        firstline_wipe(buf, sizeof(buf));
        return -1;
    }
    buf[n] = '\0';
    *out = strdup(buf);
    firstline_wipe(buf, sizeof(buf));
    if (*out == NULL) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    return 0;
}

#endif
