/* codec/tokcache.h: the token cache of docs/format.md §3.6.
 *
 * Owns the group's decayed token counts (a unigram over the vocabulary ids, <unk> standing for every
 * unknown word, and follower lists of the previous token and of the previous two), the mixing weights
 * chosen by how much those two contexts have seen, and the mixing itself: the network's quantised class and
 * word frequencies and the three cache experts become one set of integer frequencies, before the token
 * match flag, the class stage and the word stage code with them.  Integer arithmetic only.
 *
 * Per token the codec step (codec.c, step_token) calls, in this order:
 *     tokcache_begin        -> find the contexts of the next token, choose and normalise its weights
 *     tokcache_mix_classes  -> the class frequencies (from the network's)
 *     tokcache_mix_words    -> a class's word frequencies (from the network's), as often as needed
 *     tokcache_learn        -> the coded token's class and index: the weights move toward the experts that
 *                              predicted it
 *     tokcache_push         -> the coded token's vocabulary id and its context id (tokmatch's): counts
 * Context ids are the token match model's (vocabulary ids, V + k for the k-th distinct unknown body).
 */
#ifndef NLM_CODEC_TOKCACHE_H
#define NLM_CODEC_TOKCACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct TokCache TokCache;

/* V: vocabulary size; C: classes; class_start: [C+1] (shared, outlives the cache).  NULL on no memory. */
TokCache* tokcache_new(int V, int C, const int32_t* class_start);
void tokcache_free(TokCache* t);
void tokcache_reset(TokCache* t);
int tokcache_save(TokCache* t);    /* 0, NLM_ERR_NOMEM */
int tokcache_restore(TokCache* t); /* 0, NLM_ERR_STATE */

void tokcache_begin(TokCache* t);
/* out[c] for every class from the network's f[0..C) of total F; returns the total of out (<= 2^30). */
uint32_t tokcache_mix_classes(TokCache* t, const uint32_t* f, uint32_t F, uint32_t* out);
/* out[j] for the n words of class cls from the network's g[0..n) of total G, and the network's class
 * frequencies f (total F) given to tokcache_mix_classes; returns the total of out (<= 2^30). */
uint32_t tokcache_mix_words(const TokCache* t, int cls, const uint32_t* f, uint32_t F, const uint32_t* g,
                            uint32_t G, uint32_t* out);
/* The coded token is word j of class cls; gj / G its network frequency in the class, f / F the network's
 * class frequencies.  Moves the weights; st (may be NULL): statistics [4], += 1 for each expert (unigram,
 * order 2, order 3) that gave the token a count, and [3] += 1 for the token. */
void tokcache_learn(TokCache* t, int cls, int j, const uint32_t* f, uint32_t F, uint32_t gj, uint32_t G, double* st);
/* Count the coded token: w its vocabulary id (0 for an unknown word), id its context id. */
void tokcache_push(TokCache* t, int32_t w, uint32_t id);
size_t tokcache_memory(const TokCache* t);

#endif /* NLM_CODEC_TOKCACHE_H */
