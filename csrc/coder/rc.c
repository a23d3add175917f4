/* coder/rc.c: the range coder of docs/format.md §4, its mode-agnostic wrapper and a Fenwick tree.
 *
 * Owns the exact byte stream of a payload.  Window arithmetic (all uint64):
 *   encoder  low in [0, 2^57) (carry at bit 56), range in [2^48, 2^56);
 *            symbol: r = range / F; low += r*cum; range = r*f; while range < 2^48: shift_low, range <<= 8.
 *   shift_low: top = low >> 48 (9 bits: carry + byte).  With no byte held yet, top becomes the cache.
 *            Else if top == 0xFF one more pending 0xFF; else (top < 0xFF, or a carry) the cache + carry
 *            and the pending 0xFF + carry bytes are written and top & 0xFF becomes the cache.
 *            low = (low mod 2^48) << 8.
 *   flush:   v = the multiple of 2^56 in [low, low + range) if there is one (k = 0 extra bytes), else the
 *            smallest multiple of 2^48 >= low (k = 1; range >= 2^48 makes it fit).  low = v, one shift_low
 *            if k = 1, then the held bytes are written with v's carry.  Payload length = shifts + k.
 *   decoder  code = (value - low) in the window, 7 bytes read at init; target = code / r;
 *            code -= r*cum; range = r*f; while range < 2^48: code = code << 8 | next byte.
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "coder/rc.h"

#include <stdlib.h>
#include <string.h>

#define TOP56 (1ull << 56)
#define MASK56 (TOP56 - 1)
#define BOT48 (1ull << 48)
#define MASK48 (BOT48 - 1)

/* ---------------- encoder ---------------- */

void rc_enc_init(RcEnc* e) {
    memset(e, 0, sizeof *e);
    rc_enc_reset(e);
}

void rc_enc_reset(RcEnc* e) {
    e->len = 0;
    e->low = 0;
    e->range = MASK56;
    e->pending = 0;
    e->cache = 0;
    e->err = 0;
}

void rc_enc_free(RcEnc* e) {
    free(e->buf);
    e->buf = NULL;
    e->len = e->cap = 0;
    free(e->ops);
    e->ops = NULL;
    e->nops = e->ops_cap = 0;
}

/* RC_LOG / RC_DISCARD: the symbol is logged or dropped instead of coded. */
static int enc_sink(RcEnc* e, uint32_t cum, uint32_t f, uint32_t F) {
    if (e->err) return e->err;
    if (e->sink == RC_DISCARD) return 0;
    if (e->nops == e->ops_cap) {
        size_t cap = e->ops_cap ? 2 * e->ops_cap : 4096;
        RcOp* o = (RcOp*)realloc(e->ops, cap * sizeof *o);
        if (!o) return e->err = NLM_ERR_NOMEM;
        e->ops = o;
        e->ops_cap = cap;
    }
    e->ops[e->nops].cum = cum;
    e->ops[e->nops].f = f;
    e->ops[e->nops].F = F;
    e->nops++;
    return 0;
}

static int enc_reserve(RcEnc* e, uint64_t extra) {
    if (e->err) return e->err;
    if (e->len + extra <= e->cap) return 0;
    size_t cap = e->cap ? e->cap : 4096;
    while (cap < e->len + extra) {
        if (cap > SIZE_MAX / 2) return e->err = NLM_ERR_NOMEM;
        cap *= 2;
    }
    uint8_t* nb = (uint8_t*)realloc(e->buf, cap);
    if (!nb) return e->err = NLM_ERR_NOMEM;
    e->buf = nb;
    e->cap = cap;
    return 0;
}

/* Write the held bytes (cache, then pending-1 times 0xFF) with carry c. */
static int enc_release(RcEnc* e, unsigned c) {
    if (e->pending == 0) return 0;
    if (enc_reserve(e, e->pending)) return e->err;
    e->buf[e->len++] = (uint8_t)(e->cache + c);
    uint8_t ff = (uint8_t)(0xFF + c);
    for (uint64_t i = 1; i < e->pending; i++) e->buf[e->len++] = ff;
    e->pending = 0;
    return 0;
}

static int shift_low(RcEnc* e) {
    uint64_t top = e->low >> 48; /* 0..0x1FF */
    if (e->pending == 0) {
        e->cache = (uint8_t)top; /* no carry can reach before the first byte */
        e->pending = 1;
    } else if (top == 0xFF) {
        e->pending++;
    } else {
        if (enc_release(e, (unsigned)(top >> 8))) return e->err;
        e->cache = (uint8_t)top;
        e->pending = 1;
    }
    e->low = (e->low & MASK48) << 8;
    return 0;
}

int rc_enc_encode(RcEnc* e, uint32_t cum, uint32_t f, uint32_t F) {
    if (e->err) return e->err;
    if (e->sink) {
        if (f == 0 || F == 0 || F > RC_MAX_TOTAL || (uint64_t)cum + f > F) return NLM_ERR_STATE;
        return enc_sink(e, cum, f, F);
    }
    if (f == 0 || F == 0 || F > RC_MAX_TOTAL || (uint64_t)cum + f > F) return NLM_ERR_STATE;
    uint64_t r = e->range / F;
    e->low += r * cum;
    e->range = r * f;
    while (e->range < BOT48) {
        e->range <<= 8;
        if (shift_low(e)) return e->err;
    }
    return 0;
}

int rc_enc_finish(RcEnc* e) {
    if (e->err) return e->err;
    uint64_t v = (e->low + MASK56) & ~MASK56;
    int k = 0;
    if (v >= e->low + e->range) {
        v = (e->low + MASK48) & ~MASK48;
        k = 1;
    }
    e->low = v;
    if (k && shift_low(e)) return e->err;
    if (enc_release(e, (unsigned)(e->low >> 56))) return e->err;
    e->low = 0;
    e->range = MASK56;
    return 0;
}

int rc_enc_prefix(RcEnc* e, uint8_t b) {
    if (enc_reserve(e, 1)) return e->err;
    memmove(e->buf + 1, e->buf, e->len);
    e->buf[0] = b;
    e->len++;
    return 0;
}

/* ---------------- decoder ---------------- */

static inline uint64_t dec_byte(RcDec* d) {
    uint64_t b = d->pos < d->n ? d->src[d->pos] : 0;
    d->pos++;
    return b;
}

void rc_dec_init(RcDec* d, const uint8_t* src, size_t n) {
    memset(d, 0, sizeof *d);
    d->src = src;
    d->n = src ? n : 0;
    d->range = MASK56;
    for (int i = 0; i < 7; i++) d->code = (d->code << 8) | dec_byte(d);
    if (d->code >= d->range) d->err = NLM_ERR_CORRUPT;
}

int rc_dec_target(RcDec* d, uint32_t F, uint32_t* t) {
    if (d->err) return d->err;
    if (F == 0 || F > RC_MAX_TOTAL) return NLM_ERR_STATE;
    d->r = d->range / F;
    uint64_t q = d->code / d->r;
    if (q >= F) return d->err = NLM_ERR_CORRUPT;
    *t = (uint32_t)q;
    return 0;
}

int rc_dec_update(RcDec* d, uint32_t cum, uint32_t f) {
    if (d->err) return d->err;
    uint64_t r = d->r;
    d->code -= r * cum;
    d->low = (d->low + r * cum) & MASK56;
    d->range = r * f;
    if (d->code >= d->range) return d->err = NLM_ERR_CORRUPT;
    while (d->range < BOT48) {
        d->range <<= 8;
        d->code = (d->code << 8) | dec_byte(d);
        d->low = (d->low << 8) & MASK56;
    }
    return 0;
}

size_t rc_dec_past_end(const RcDec* d) { return d->pos > d->n ? d->pos - d->n : 0; }

int rc_dec_finish(RcDec* d) {
    if (d->err) return d->err;
    uint64_t v = (d->low + MASK56) & ~MASK56;
    uint64_t k = 0;
    if (v >= d->low + d->range) {
        v = (d->low + MASK48) & ~MASK48;
        k = 1;
    }
    /* pos = 7 + shifts; the encoder wrote shifts + k bytes; the window must hold v's bytes. */
    if (d->pos < 7 || d->n != d->pos - 7 + k) return d->err = NLM_ERR_CORRUPT;
    if (((d->low + d->code) & MASK56) != (v & MASK56)) return d->err = NLM_ERR_CORRUPT;
    return 0;
}

/* ---------------- binary decisions ---------------- */

int rc_enc_bit(RcEnc* e, int bit, uint32_t p1) {
    if (e->err) return e->err;
    if (p1 == 0 || p1 >= 4096) return NLM_ERR_STATE;
    if (e->sink) return enc_sink(e, bit ? 1u : 0u, p1, 0);
    uint64_t r = e->range >> 12; /* = range / 4096 */
    if (bit) {
        e->range = r * p1;
    } else {
        e->low += r * p1;
        e->range = r * (4096 - p1);
    }
    while (e->range < BOT48) {
        e->range <<= 8;
        if (shift_low(e)) return e->err;
    }
    return 0;
}

int rc_enc_replay(RcEnc* dst, const RcEnc* src, size_t from, size_t to) {
    if (dst->sink != RC_CODE || to > src->nops || from > to) return NLM_ERR_STATE;
    for (size_t i = from; i < to; i++) {
        const RcOp* o = &src->ops[i];
        int r = o->F ? rc_enc_encode(dst, o->cum, o->f, o->F) : rc_enc_bit(dst, (int)o->cum, o->f);
        if (r < 0) return r;
    }
    return 0;
}

/* log2(x) in 1/65536, truncated, for 1 <= x < 2^32: the integer part from the highest bit, 16 fraction bits by
 * repeated squaring of the mantissa (Q31). */
static uint32_t log2_q16(uint32_t x) {
    uint32_t n = 0;
    while ((x >> n) > 1) n++;
    uint64_t y = ((uint64_t)x << 31) >> n; /* [2^31, 2^32): the mantissa in [1, 2) */
    uint32_t frac = 0;
    for (int i = 0; i < 16; i++) {
        y = (y * y) >> 31;
        frac <<= 1;
        if (y >= (1ull << 32)) {
            frac |= 1;
            y >>= 1;
        }
    }
    return n << 16 | frac;
}

uint32_t rc_cost(uint32_t f, uint32_t F) { return log2_q16(F) - log2_q16(f); }

uint64_t rc_ops_cost(const RcEnc* e, size_t from, size_t to) {
    uint64_t s = 0;
    for (size_t i = from; i < to && i < e->nops; i++) {
        const RcOp* o = &e->ops[i];
        s += o->F ? rc_cost(o->f, o->F) : rc_cost(o->cum ? o->f : 4096 - o->f, 4096);
    }
    return s;
}

int rc_dec_bit(RcDec* d, uint32_t p1, int* bit) {
    if (d->err) return d->err;
    if (p1 == 0 || p1 >= 4096) return NLM_ERR_STATE;
    uint64_t r = d->range >> 12;
    if (d->code >= r * 4096) return d->err = NLM_ERR_CORRUPT; /* target >= F */
    uint64_t b = r * p1;
    if (d->code < b) { /* target < p1 */
        *bit = 1;
        d->range = b;
    } else {
        *bit = 0;
        d->code -= b;
        d->low = (d->low + b) & MASK56;
        d->range = r * (4096 - p1);
    }
    while (d->range < BOT48) {
        d->range <<= 8;
        d->code = (d->code << 8) | dec_byte(d);
        d->low = (d->low << 8) & MASK56;
    }
    return 0;
}

/* ---------------- wrapper ---------------- */

int rc_code_freqs(Rc* rc, const uint32_t* f, int n, uint32_t F, int* sym) {
    if (!rc->decoding) {
        int s = *sym;
        if (s < 0 || s >= n || f[s] == 0) return NLM_ERR_STATE;
        uint32_t cum = 0;
        for (int i = 0; i < s; i++) cum += f[i];
        return rc_enc_encode(&rc->enc, cum, f[s], F);
    }
    uint32_t t;
    int err = rc_dec_target(&rc->dec, F, &t);
    if (err) return err;
    uint32_t cum = 0;
    for (int i = 0; i < n; i++) {
        if (t < cum + f[i]) {
            *sym = i;
            return rc_dec_update(&rc->dec, cum, f[i]);
        }
        cum += f[i];
    }
    return rc->dec.err = NLM_ERR_CORRUPT; /* F > Σf: caller error or corrupt */
}

int rc_code_cum(Rc* rc, uint32_t F, int* sym, uint32_t cum_enc, uint32_t f_enc, RcFindFn find, void* ctx) {
    if (!rc->decoding) return rc_enc_encode(&rc->enc, cum_enc, f_enc, F);
    uint32_t t, cum, f;
    int err = rc_dec_target(&rc->dec, F, &t);
    if (err) return err;
    err = find(ctx, t, sym, &cum, &f);
    if (err) return err;
    if (f == 0 || t < cum || t - cum >= f) return rc->dec.err = NLM_ERR_CORRUPT;
    return rc_dec_update(&rc->dec, cum, f);
}

/* ---------------- Fenwick tree ---------------- */

void fen_init(Fen* fw) { memset(fw, 0, sizeof *fw); }

void fen_free(Fen* fw) {
    free(fw->v);
    free(fw->t);
    memset(fw, 0, sizeof *fw);
}

void fen_clear(Fen* fw) {
    fw->n = 0;
    fw->total = 0;
    if (fw->t) memset(fw->t, 0, (size_t)(fw->cap + 1) * sizeof *fw->t);
}

void fen_set_all(Fen* fw) {
    uint32_t tot = 0;
    memset(fw->t, 0, (size_t)(fw->cap + 1) * sizeof *fw->t);
    for (int i = 1; i <= fw->cap; i++) { /* to cap: partial sums propagate past n */
        if (i <= fw->n) {
            fw->t[i] += fw->v[i - 1];
            tot += fw->v[i - 1];
        }
        int j = i + (i & -i);
        if (j <= fw->cap) fw->t[j] += fw->t[i];
    }
    fw->total = tot;
}

static int fen_grow(Fen* fw, int need) {
    if (need <= fw->cap) return 0;
    int cap = fw->cap ? fw->cap : 64;
    while (cap < need) {
        if (cap > (1 << 29)) return NLM_ERR_NOMEM;
        cap *= 2;
    }
    uint32_t* v = (uint32_t*)realloc(fw->v, (size_t)cap * sizeof *v);
    if (!v) return NLM_ERR_NOMEM;
    fw->v = v;
    uint32_t* t = (uint32_t*)realloc(fw->t, (size_t)(cap + 1) * sizeof *t);
    if (!t) return NLM_ERR_NOMEM;
    fw->t = t;
    fw->cap = cap;
    fen_set_all(fw);
    return 0;
}

int fen_push(Fen* fw, uint32_t v) {
    int err = fen_grow(fw, fw->n + 1);
    if (err) return err;
    fw->v[fw->n] = 0;
    fw->n++;
    fen_add(fw, fw->n - 1, v);
    return 0;
}

void fen_add(Fen* fw, int i, uint32_t delta) {
    fw->v[i] += delta;
    fw->total += delta;
    for (int j = i + 1; j <= fw->cap; j += j & -j) fw->t[j] += delta;
}

uint32_t fen_prefix(const Fen* fw, int i) {
    uint32_t s = 0;
    for (int j = i; j > 0; j -= j & -j) s += fw->t[j];
    return s;
}

int fen_find(const Fen* fw, uint32_t t, uint32_t* cum) {
    int pos = 0;
    uint32_t acc = 0;
    for (int step = fw->cap; step > 0; step >>= 1) {
        int nx = pos + step;
        if (nx <= fw->cap && acc + fw->t[nx] <= t) {
            pos = nx;
            acc += fw->t[nx];
        }
    }
    *cum = acc;
    return pos; /* 0-based index of the element containing t (== n when t >= total) */
}

int fen_copy(Fen* dst, const Fen* src) {
    if (dst->cap < src->cap) {
        uint32_t* v = (uint32_t*)realloc(dst->v, (size_t)src->cap * sizeof *v);
        if (!v) return NLM_ERR_NOMEM;
        dst->v = v;
        uint32_t* t = (uint32_t*)realloc(dst->t, (size_t)(src->cap + 1) * sizeof *t);
        if (!t) return NLM_ERR_NOMEM;
        dst->t = t;
        dst->cap = src->cap;
    } else if (dst->cap > src->cap) {
        /* keep dst's larger capacity: rebuild its tree from the copied values */
        dst->n = src->n;
        if (src->n) memcpy(dst->v, src->v, (size_t)src->n * sizeof *dst->v);
        fen_set_all(dst);
        return 0;
    }
    dst->n = src->n;
    dst->total = src->total;
    if (src->n) memcpy(dst->v, src->v, (size_t)src->n * sizeof *dst->v);
    if (src->cap) memcpy(dst->t, src->t, (size_t)(src->cap + 1) * sizeof *dst->t);
    return 0;
}

static int fen_find_cb(void* ctx, uint32_t t, int* sym, uint32_t* cum, uint32_t* f) {
    const Fen* fw = (const Fen*)ctx;
    int i = fen_find(fw, t, cum);
    if (i >= fw->n) return NLM_ERR_CORRUPT;
    *sym = i;
    *f = fw->v[i];
    return 0;
}

int rc_code_fen(Rc* rc, const Fen* fw, int* sym) {
    if (!rc->decoding) {
        int s = *sym;
        if (s < 0 || s >= fw->n || fw->v[s] == 0) return NLM_ERR_STATE;
        return rc_enc_encode(&rc->enc, fen_prefix(fw, s), fw->v[s], fw->total);
    }
    return rc_code_cum(rc, fw->total, sym, 0, 0, fen_find_cb, (void*)fw);
}
