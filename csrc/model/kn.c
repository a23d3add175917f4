/* model/kn.c: the interpolated Kneser-Ney trigram expert (docs/format.md §2.5; kn.h).
 *
 * Section layout (docs/model_format.md field 13a), little-endian, no padding:
 *   lam f32 | m3 u32 | n2 u32 | n3 u32 | p1 V×f32 | g2 V×f32 | o2 (V+1)×u32 | e2 n2×(w u32, a f32)
 *   | k3 m3×u64 | g3 m3×f32 | o3 (m3+1)×u32 | e3 n3×(w u32, a f32)
 * Bigram context v owns e2[o2[v] .. o2[v+1]); trigram context i (key k3[i] = u·V + v, keys strictly
 * increasing) owns e3[o3[i] .. o3[i+1]); inside a context the words are strictly increasing.
 * Shapes: p1, g2 (V); P1c (C) = Σ_{w in c} p1[w] in ascending w, computed here once.
 */
#include "../common/fpenv.h"
#include "kn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../nlm.h"

struct Kn {
    int V, C;
    float lam;
    const int32_t* cs;  /* (C+1) the model's class starts (owned by the model) */
    const int32_t* cls; /* (V) class of each id (owned by the model) */
    float *p1, *g2, *P1c;
    uint32_t* o2;
    uint32_t* w2;
    float* a2;
    uint32_t m3;
    uint64_t* k3;
    float* g3;
    uint32_t* o3;
    uint32_t* w3;
    float* a3;
    size_t bytes;
};

static uint32_t rd32(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static float rdf(const uint8_t* p) {
    uint32_t u = rd32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static int fin_nonneg(float f) { return isfinite(f) && f >= 0.0f; }

void kn_free(Kn* k) {
    if (!k) return;
    free(k->p1), free(k->g2), free(k->P1c), free(k->o2), free(k->w2), free(k->a2);
    free(k->k3), free(k->g3), free(k->o3), free(k->w3), free(k->a3);
    free(k);
}

/* Read n entries (w u32, a f32) of contexts with offsets o[0..nctx] into w[], a[]; 0 if malformed. */
static int read_entries(const uint8_t* p, const uint32_t* o, uint32_t nctx, uint32_t n, int V, uint32_t* w,
                        float* a) {
    if (o[0] != 0 || o[nctx] != n) return 0;
    for (uint32_t c = 0; c < nctx; c++) {
        if (o[c + 1] < o[c]) return 0;
        for (uint32_t i = o[c]; i < o[c + 1]; i++) {
            w[i] = rd32(p + (size_t)i * 8);
            a[i] = rdf(p + (size_t)i * 8 + 4);
            if (w[i] >= (uint32_t)V || !fin_nonneg(a[i]) || (i > o[c] && w[i] <= w[i - 1])) return 0;
        }
    }
    return 1;
}

Kn* kn_new(const uint8_t* b, size_t n, int V, int C, const int32_t* cs, const int32_t* cls, int* err) {
    int e = NLM_ERR_CONFIG;
    Kn* k = NULL;
    if (!b || n < 16 || V < 2 || C < 1) goto fail;
    float lam = rdf(b);
    uint32_t m3 = rd32(b + 4), n2 = rd32(b + 8), n3 = rd32(b + 12);
    /* the exact length, in 64 bits (no count can overflow it) */
    uint64_t need = 16 + 8ull * (uint64_t)V + 4ull * ((uint64_t)V + 1) + 8ull * n2 + 12ull * m3 +
                    4ull * ((uint64_t)m3 + 1) + 8ull * n3;
    if (!(lam >= 0.0f && lam <= 1.0f) || need != (uint64_t)n) goto fail;
    e = NLM_ERR_NOMEM;
    if (!(k = calloc(1, sizeof *k))) goto fail;
    k->V = V, k->C = C, k->lam = lam, k->cs = cs, k->cls = cls, k->m3 = m3;
    size_t Vz = (size_t)V;
    k->p1 = malloc(Vz * 4), k->g2 = malloc(Vz * 4), k->P1c = malloc((size_t)C * 4);
    k->o2 = malloc((Vz + 1) * 4), k->w2 = malloc((size_t)n2 * 4 + 4), k->a2 = malloc((size_t)n2 * 4 + 4);
    k->k3 = malloc((size_t)m3 * 8 + 8), k->g3 = malloc((size_t)m3 * 4 + 4), k->o3 = malloc(((size_t)m3 + 1) * 4);
    k->w3 = malloc((size_t)n3 * 4 + 4), k->a3 = malloc((size_t)n3 * 4 + 4);
    if (!k->p1 || !k->g2 || !k->P1c || !k->o2 || !k->w2 || !k->a2 || !k->k3 || !k->g3 || !k->o3 || !k->w3 ||
        !k->a3)
        goto fail;
    k->bytes = sizeof *k + Vz * 12 + 4 + (size_t)C * 4 + (size_t)n2 * 8 + (size_t)m3 * 16 + 4 + (size_t)n3 * 8;
    e = NLM_ERR_CONFIG;
    const uint8_t* p = b + 16;
    for (int w = 0; w < V; w++, p += 4) {
        k->p1[w] = rdf(p);
        if (!(isfinite(k->p1[w]) && k->p1[w] > 0.0f && k->p1[w] <= 1.0f)) goto fail;
    }
    for (int w = 0; w < V; w++, p += 4)
        if (!fin_nonneg(k->g2[w] = rdf(p))) goto fail;
    for (int w = 0; w <= V; w++, p += 4) k->o2[w] = rd32(p);
    if (!read_entries(p, k->o2, (uint32_t)V, n2, V, k->w2, k->a2)) goto fail;
    p += (size_t)n2 * 8;
    for (uint32_t i = 0; i < m3; i++, p += 8) {
        k->k3[i] = (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
        if (k->k3[i] >= (uint64_t)V * (uint64_t)V || (i > 0 && k->k3[i] <= k->k3[i - 1])) goto fail;
    }
    for (uint32_t i = 0; i < m3; i++, p += 4)
        if (!fin_nonneg(k->g3[i] = rdf(p))) goto fail;
    for (uint32_t i = 0; i <= m3; i++, p += 4) k->o3[i] = rd32(p);
    if (!read_entries(p, k->o3, m3, n3, V, k->w3, k->a3)) goto fail;
    /* P1c: the unigram's class sums, ascending w (docs/format.md §2.5) */
    for (int c = 0; c < C; c++) {
        float s = 0.0f;
        for (int w = cs[c]; w < cs[c + 1]; w++) s = s + k->p1[w];
        k->P1c[c] = s;
    }
    return k;
fail:
    kn_free(k);
    if (err) *err = e;
    return NULL;
}

size_t kn_memory(const Kn* k) { return k ? k->bytes : 0; }
float kn_lambda(const Kn* k) { return k->lam; }

/* index of the trigram context (u, v), or -1 */
static int64_t ctx3(const Kn* k, int u, int v) {
    uint64_t key = (uint64_t)u * (uint64_t)k->V + (uint64_t)v;
    int64_t lo = 0, hi = (int64_t)k->m3 - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (k->k3[mid] == key) return mid;
        if (k->k3[mid] < key) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* first entry index in [lo, hi) whose word is >= a */
static uint32_t lower(const uint32_t* w, uint32_t lo, uint32_t hi, uint32_t a) {
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (w[mid] < a) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void kn_class_probs(const Kn* k, int u, int v, float* pc) {
    int64_t i3 = ctx3(k, u, v);
    float g3 = i3 >= 0 ? k->g3[i3] : 1.0f;
    float base = g3 * k->g2[v];
    for (int c = 0; c < k->C; c++) pc[c] = base * k->P1c[c];
    for (uint32_t i = k->o2[v]; i < k->o2[v + 1]; i++) pc[k->cls[k->w2[i]]] += g3 * k->a2[i];
    if (i3 >= 0)
        for (uint32_t i = k->o3[i3]; i < k->o3[i3 + 1]; i++) pc[k->cls[k->w3[i]]] += k->a3[i];
}

void kn_word_probs(const Kn* k, int u, int v, int a, int b, float* pw) {
    int64_t i3 = ctx3(k, u, v);
    float g3 = i3 >= 0 ? k->g3[i3] : 1.0f;
    float base = g3 * k->g2[v];
    for (int w = a; w < b; w++) pw[w - a] = base * k->p1[w];
    for (uint32_t i = lower(k->w2, k->o2[v], k->o2[v + 1], (uint32_t)a); i < k->o2[v + 1] && k->w2[i] < (uint32_t)b; i++)
        pw[k->w2[i] - (uint32_t)a] += g3 * k->a2[i];
    if (i3 >= 0)
        for (uint32_t i = lower(k->w3, k->o3[i3], k->o3[i3 + 1], (uint32_t)a); i < k->o3[i3 + 1] && k->w3[i] < (uint32_t)b; i++)
            pw[k->w3[i] - (uint32_t)a] += k->a3[i];
}
