/*
 * The offset tracker of one partition (see ekf.h). Offsets come in
 * increasing order, so the ones in flight are a sorted window: a result
 * finds its offset by binary search, and the window's head moves past every
 * offset that is done. Memory is that of the offsets in flight, which the
 * engine's buffer bounds (buffer.max.docs / buffer.max.bytes).
 */
#include "ekf.h"

#include <stdlib.h>
#include <string.h>

void ekf_track_init(ekf_track_t *t)
{
    memset(t, 0, sizeof(*t));
    t->next = -1;
}

void ekf_track_free(ekf_track_t *t)
{
    free(t->off);
    free(t->st);
    ekf_track_init(t);
}

void ekf_track_reset(ekf_track_t *t)
{
    t->head = t->len = t->dead = 0;
    t->next = -1;
}

static size_t slot(const ekf_track_t *t, size_t i)
{
    return (t->head + i) % t->cap;
}

static int grow(ekf_track_t *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    int64_t *off = malloc(cap * sizeof(*off));
    uint8_t *st = malloc(cap);

    if (off == NULL || st == NULL) {
        free(off);
        free(st);
        return -1;
    }
    for (size_t i = 0; i < t->len; i++) {
        off[i] = t->off[slot(t, i)];
        st[i] = t->st[slot(t, i)];
    }
    free(t->off);
    free(t->st);
    t->off = off;
    t->st = st;
    t->cap = cap;
    t->head = 0;
    return 0;
}

int ekf_track_add(ekf_track_t *t, int64_t offset)
{
    if (offset < 0 || (t->next >= 0 && offset < t->next))
        return -2;
    if (t->len == t->cap && grow(t) != 0)
        return -1;
    size_t s = slot(t, t->len);
    t->off[s] = offset;
    t->st[s] = EKF_PENDING;
    t->len++;
    t->next = offset + 1;
    return 0;
}

int ekf_track_set(ekf_track_t *t, int64_t offset, ekf_state_t state)
{
    size_t lo = 0, hi = t->len;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->off[slot(t, mid)] < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->len || t->off[slot(t, lo)] != offset || t->st[slot(t, lo)] == EKF_DONE ||
        t->st[slot(t, lo)] == EKF_FAILED)
        return -1;
    size_t s = slot(t, lo);
    if (t->st[s] == EKF_DEAD_PENDING)
        t->dead--;
    if (state == EKF_DEAD_PENDING)
        t->dead++;
    t->st[s] = (uint8_t)state;
    /* the watermark moves only over a run of done offsets from the head */
    while (t->len > 0 && t->st[t->head] == EKF_DONE) {
        t->head = (t->head + 1) % t->cap;
        t->len--;
    }
    return 0;
}

int ekf_track_drop(ekf_track_t *t, int64_t offset)
{
    return ekf_track_set(t, offset, EKF_FAILED);
}

int64_t ekf_track_watermark(const ekf_track_t *t)
{
    if (t->len > 0)
        return t->off[t->head];
    return t->next;
}

size_t ekf_track_inflight(const ekf_track_t *t)
{
    size_t n = 0;

    for (size_t i = 0; i < t->len; i++)
        n += t->st[slot(t, i)] == EKF_PENDING || t->st[slot(t, i)] == EKF_DEAD_PENDING;
    return n;
}
