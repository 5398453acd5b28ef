/* SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for AWS SigV4 request
 * signing. Dependency-free, no allocation: nothing here can fail. */
#ifndef ESBULK_SHA256_H
#define ESBULK_SHA256_H

#include "common.h"

#define ESBULK__SHA256_LEN 32

typedef struct {
    uint32_t h[8];
    uint64_t bytes;          /* total bytes hashed */
    unsigned char block[64];
    size_t fill;             /* bytes in block */
} esbulk__sha256_t;

void esbulk__sha256_init(esbulk__sha256_t *c);
/* p may be NULL when n == 0. */
void esbulk__sha256_update(esbulk__sha256_t *c, const void *p, size_t n);
/* Writes the digest and wipes *c with esbulk__wipe(). */
void esbulk__sha256_final(esbulk__sha256_t *c, unsigned char out[ESBULK__SHA256_LEN]);
/* One-shot SHA-256 of p[0..n) (p may be NULL when n == 0). */
void esbulk__sha256(const void *p, size_t n, unsigned char out[ESBULK__SHA256_LEN]);

/* HMAC-SHA256 (RFC 2104); keys longer than 64 bytes are hashed first; every
 * key-derived intermediate (padded keys, inner context) wiped with
 * esbulk__wipe(). key or msg may be NULL when its length is 0. */
void esbulk__hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                         unsigned char out[ESBULK__SHA256_LEN]);

/* use 1: the CPU's SHA instructions when it has them (the default); 0:
 * portable C (tests run both). Returns whether they are used now. */
int esbulk__sha256_accelerated(int use);
/* The CPU instructions this build can use, whether or not this CPU has
 * them ("SHA-NI", "ARMv8 SHA-2"), or NULL: portable C only (clang builds
 * for ARMv8 without -march=...+sha2, other architectures). */
const char *esbulk__sha256_hw_name(void);

/* Lowercase hex of p[0..n) into out, which holds 2n+1 bytes (NUL-terminated). */
void esbulk__hex(const unsigned char *p, size_t n, char *out);

#endif
