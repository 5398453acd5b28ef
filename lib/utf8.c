/* Checks that a string is strict UTF-8 (utf8.h), ASCII eight bytes at a
 * time. */
#include "utf8.h"

#include <string.h>

int esbulk__utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        uint64_t v;

        /* ASCII eight bytes at a time */
        if (i + 8 <= len && (memcpy(&v, u + i, 8), (v & 0x8080808080808080ULL) == 0)) {
            i += 8;
            continue;
        }
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        if (esbulk__utf8_next(u, len, &i) < 0)
            return 0;
    }
    return 1;
}
