/* codec/dirtyslots.h: the slots of a hash table written since its last snapshot copy.
 *
 * Owns the bookkeeping the context tables of the token cache (tokcache.c) and of the body mixer (bodymix.c)
 * share: the encoder saves the codec's state before each block and restores it when it drops the block, and
 * a table's save or restore copies only the slots its one writer marked here since the previous copy, not the
 * whole table (megabytes).  A mark per slot and the list of the marked ones; the owner keeps its own
 * "everything" flag for the copy after a reset.
 */
#ifndef NLM_CODEC_DIRTYSLOTS_H
#define NLM_CODEC_DIRTYSLOTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint8_t* mark;  /* [S] 1: in list */
    uint32_t* list; /* [S] the marked slots, in marking order */
    uint32_t n;
} DirtySlots;

/* For a table of S slots; 0 when out of memory (dirty_free then frees what was made). */
static inline int dirty_init(DirtySlots* d, size_t S) {
    d->mark = (uint8_t*)calloc(S, 1);
    d->list = (uint32_t*)malloc(S * sizeof(uint32_t));
    d->n = 0;
    return d->mark && d->list;
}

static inline void dirty_free(DirtySlots* d) { free(d->mark), free(d->list); }

static inline void dirty_add(DirtySlots* d, size_t i) {
    if (!d->mark[i]) d->mark[i] = 1, d->list[d->n++] = (uint32_t)i;
}

static inline void dirty_clear(DirtySlots* d) {
    for (uint32_t q = 0; q < d->n; q++) d->mark[d->list[q]] = 0;
    d->n = 0;
}

#endif /* NLM_CODEC_DIRTYSLOTS_H */
