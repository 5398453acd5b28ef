/* Wiping secrets: a plain memset() of a buffer that is freed right after is
 * a dead store the compiler may drop (GCC and clang do), so secrets are
 * cleared through a call it must keep. */
#include "common.h"

#define __STDC_WANT_LIB_EXT1__ 1 /* memset_s, where the C library has Annex K */
#include <string.h>

void esbulk__wipe(void *p, size_t n)
{
    if (p == NULL || n == 0)
        return;
#if defined(HAVE_EXPLICIT_BZERO)
    explicit_bzero(p, n);
#elif defined(HAVE_MEMSET_S)
    memset_s(p, n, 0, n);
#else
    {
        /* stores through a volatile pointer may not be elided */
        volatile unsigned char *v = p;

        while (n--)
            *v++ = 0;
    }
#endif
}

void esbulk__wipe_str(char *s)
{
    if (s != NULL)
        esbulk__wipe(s, strlen(s));
}
