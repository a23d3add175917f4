/* codec.c: the token step shared by encoder and decoder, block encode/decode, and the nlm.h entry points.
 *
 * Owns: docs/format.md §3 (what is coded per token, in which order) and the NlmCodec context.  The step
 * function step_token() is the ONLY place that drives the model and the quantiser, and every symbol of a
 * format's block goes through it (the measured line route adds its route bits and the run's bytes around it);
 * the encoder and the decoder differ only in Rc.decoding (the coder writes or reads each symbol).
 * Not here: the lexer (lexer/), the model arithmetic (model/), the coder (coder/), the speller (speller/),
 * the frame (python/nlmcodec/_frame.py).
 *
 * Per token (docs/format.md §3): [match flag] -> class -> word in class -> [unknown body: cache/speller] -> [case]
 * -> gap [-> literal gap run] -> advance the state -> [dynamic: update after every seg_len tokens].  With the
 * token cache (§3.6) the flag, class and word stages code with the network's frequencies mixed with it.
 *
 * Also owns the line route of format 17 (docs/format.md §3.8; encode_routed, decode_routed: a tracked group's
 * block whose lines the word model or the group's byte-model run codes, each line's route bit before its tokens;
 * docs/decisions/line-route.md), which drives the run and the route bits around step_token.
 *
 * Also owns the optional per-token trace (nlm_codec_trace, NlmTraceRec in nlm.h): step_token fills one
 * record per token from the frequencies it codes with; the trace only reads, so coding is unchanged.
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include <math.h> /* log2: statistics only, never feeds coding */
#include <stdlib.h>
#include <string.h>

#include "codec/gapmix.h"   /* GapMix: column-aware gap counts */
#include "codec/gapmixer.h" /* GapMixer: gaps and literal runs by a binary mixer, format 14 (§3.7) */
#include "coder/quant.h"    /* quant_freqs */
#include "coder/rc.h"       /* Rc, rc_* */
#include "lexer/lex.h"      /* nlm_lex, LexVocab, lex_* */
#include "model/lm.h"       /* LmWeights, Lm, lm_* (the model interface; the model types: lm_body_for) */
#include "nlm.h"
#include "nlm_lab.h"        /* the single-option setters this file implements */
#include "codec/formats.h"  /* NLM_FORMATS: what a (format, mode) means */
#include "speller/speller.h" /* Speller, speller_* */
#include "codec/tokmatch.h" /* TokMatch, tokmatch_*: the token match model (§3.4) */
#include "codec/tokcache.h" /* TokCache, tokcache_*: the token cache mixed into the class and word stages (§3.6) */
#include "codec/bodymix.h"  /* BodyMix, bodymix_*: unknown bodies predicted as tokens, the cache pointer (§5.1.1) */
#include "codec/bytecodec.h" /* bytecoder_run: a tracked group's run, for the line route (§3.8) */
#include "bytemodel/cm.h"    /* cm_code, cm_learn_block: the run's bytes in a routed block */

#define MAX_BODY 32 /* NLM_MAX_WORD: the longest body the lexer makes */
#define MAX_GAP_RUN 65535
#define MAX_PAST_END 16 /* a valid payload never makes the decoder read this far past its end */

/* The immutable model shared by every context: weights (model/), vocabulary, class map, priming list. */
struct NlmModel {
    NlmConfig cfg;
    LmWeights* weights;
    LexVocab vocab;
    int32_t* class_start; /* [C+1] */
    int maxclass;
    size_t vocab_len;
    Speller* primed;      /* primed once from the model's list; contexts share its tables (speller_new_shared) */
};

/* The line route (measured, docs/decisions/line-route.md): P(a line starting here is the run's), an adaptive
 * probability per context (the routes of the two lines before, the class of the line before's first byte, whether
 * a line is known to start here), updated like the gap mixer's slots, one line late (see route_apply). */
#define ROUTE_CTX 64
#define ROUTE_LIMIT 60
typedef struct {
    uint16_t q[ROUTE_CTX]; /* P(route = byte model) in 16 bits */
    uint8_t n[ROUTE_CTX];
    int last;              /* the routes of the last two lines (bit 0 the last) */
    int pend_ctx, pend_y;  /* the last line start's context and route, not learnt yet (pend_ctx -1: none) */
} RouteFlag;

struct NlmCodec {
    const NlmModel* shared;
    NlmConfig cfg;
    int adapt;
    Lm* model;
    Speller* speller;
    const LexVocab* vocab;
    const int32_t* class_start; /* [C+1] */
    Rc rc;
    int seg_fill;         /* tokens coded since the last update */
    int seg_fill_saved;
    double stats[NLM_STAT_COUNT];
    double stats_saved[NLM_STAT_COUNT];
    uint32_t* freq;       /* scratch, max(C, largest class, 8) */
    GapMix gapmix, gapmix_saved;
    int gapmixer_on;      /* the format's gap_mixer (formats.h): gaps coded by the gap mixer (gapmixer.h) */
    GapMixer *gm, *gm_saved;
    GmTables* gmt;
    GmPending *gp0, *gp;  /* the line route: node 13's predictions kept until the gap is known */
    struct LineMark* marks; /* the line route's encoder: where each token of a logged line starts */
    size_t marks_cap;
    int match_on;         /* nlm_codec_set_match level > 0: the token match flag of docs/format.md §3.4 (the level,
                           * 1 one APM or 2 two APMs, is the flag model's: tokmatch_set_flag_model) */
    uint32_t max_tokens;  /* nlm_codec_set_max_tokens: tokens per block, END included (§3.5); 0: none */
    int end_advance;      /* nlm_codec_set_end_advance: a block's <end> advances the network (§3.2 step 6; on is a
                           * measurement option, the formats' choice is in formats.h) */
    int forward;          /* nlm_codec_set_forward: 1 = the integer forward (§2.6; a heads-mode context's
                           * transition too, §6.5) */
    int bits_on;          /* nlm_codec_set_bit_stats: the statistics' information sums (log2 per symbol) */
    TokMatch* match;
    uint32_t* freq2;      /* scratch, largest class: the predicted token's class (§3.4) */
    int cache_on;         /* nlm_codec_set_cache: 0 off, 1 the token cache of docs/format.md §3.6, 2 that and
                           * the body mixer of §5.1.1 */
    TokCache* cache;
    BodyMix* bmix;
    uint32_t* cnet;       /* scratch [C]: the network's class frequencies, before the cache's mixing */
    uint32_t* pnet;       /* scratch, largest class: the network's word frequencies of the predicted class */
    uint32_t* wnet;       /* scratch, largest class: ... of the coded class */
    NlmLexToken* toks;
    size_t toks_cap;
    int trace_on;         /* nlm_codec_trace */
    NlmTraceRec* trace;   /* [trace_cap], the records of the last nlm_encode_block */
    size_t trace_cap, trace_n;
    int lab_dists;        /* nlm_lab_trace_dists: also record each traced token's class and gap distributions */
    float* dists;         /* [dists_cap][C + NLM_NGAP] */
    size_t dists_cap;
    /* the line route (format 17, §3.8) */
    int route_on;         /* the line route may be used (format 17's rows; nlm_lab.h nlm_codec_set_route) */
    NlmByteCoder* router; /* nlm_codec_set_router: the tracked group's byte coder, or NULL */
    int route_lines;      /* the encoder's route byte with a router */
    RouteFlag route, route_saved;
    RcEnc shadow;         /* encoder: the run's coding of the whole block (nlm_codec_route_byte_payload) */
    uint8_t* shadow_out;  /* ... as a byte-model payload */
    size_t shadow_len;
    int shadow_ok;
};

const char* nlm_error_name(int code) {
    switch (code) {
#define NLM_X_CASE(name, value, msg) \
    case value:                      \
        return msg;
        NLM_ERR_LIST(NLM_X_CASE)
#undef NLM_X_CASE
    }
    return "unknown error";
}

/* ---- helpers ---- */

static double bits_of(const uint32_t* f, int sym, uint32_t F) { return log2((double)F / (double)f[sym]); }

/* The information sums of the statistics are wanted (nlm_codec_set_bit_stats, or a trace, which is made from
 * them); they never feed coding. */
static inline int bits_wanted(const NlmCodec* c) { return c->bits_on || c->trace_on; }

/* Kind of a body as the decoder sees it: from its bytes alone (docs/format.md §3.2 step 4). */
static int body_kind(const uint8_t* b, int n) {
    if (n == 0) return NLM_KIND_END;
    NlmLexToken t[2];
    /* The lexer applied to the body alone gives its kind: a body is exactly one token. */
    if (nlm_lex(b, (size_t)n, t, 2) < 1) return NLM_KIND_SYMBOL;
    return t[0].kind;
}

/* Code one symbol over frequencies f[0..n) of total F (0 frequencies allowed: those symbols cannot occur). */
static int code_freqs(NlmCodec* c, const uint32_t* f, int n, uint32_t F, int* sym, double* stat) {
    if (F == 0) return NLM_ERR_CORRUPT;
    int r = rc_code_freqs(&c->rc, f, n, F, sym);
    if (r < 0) return r;
    if (*sym < 0 || *sym >= n || f[*sym] == 0) return NLM_ERR_CORRUPT;
    if (stat && bits_wanted(c)) *stat += bits_of(f, *sym, F);
    return NLM_OK;
}

/* The gap mixer's coder callback (gapmixer.h GmCodeBit). */
static int gm_code_bit(void* ctx, int* bit, int p1) {
    NlmCodec* c = (NlmCodec*)ctx;
    return c->rc.decoding ? rc_dec_bit(&c->rc.dec, (uint32_t)p1, bit) : rc_enc_bit(&c->rc.enc, *bit, (uint32_t)p1);
}

static int code_symbol(NlmCodec* c, const float* z, int n, int* sym, double* stat) {
    uint32_t F = quant_freqs(c->freq, z, n);
    return code_freqs(c, c->freq, n, F, sym, stat);
}

/* One binary decision with P(bit = 1) = p1 / 2^12 (coder/rc.h). */
static int code_bit(NlmCodec* c, int* bit, int p1, double* stat) {
    int r = c->rc.decoding ? rc_dec_bit(&c->rc.dec, (uint32_t)p1, bit) : rc_enc_bit(&c->rc.enc, *bit, (uint32_t)p1);
    if (r < 0) return r;
    if (stat && bits_wanted(c)) *stat += log2(4096.0 / (double)(*bit ? p1 : 4096 - p1));
    return NLM_OK;
}

/* One token (docs/format.md §3).  Encoder: t is read.  Decoder: t is written.  body/blen: the body as sent
 * (lowercased for cases 0-2), gap bytes in gapbuf for literal gaps. */
typedef struct {
    int32_t w;
    uint8_t body[MAX_BODY];
    int blen;
    int ccase;
    int gap;
    uint8_t* gapbuf; /* literal run (encoder: points into the input; decoder: scratch) */
    int glen;
    const GmKnown* known; /* the line route: what is known of the gap before it is coded; NULL nothing */
} StepTok;

/* Trace only: the NLM_TRACE_TOPK largest of f[0..n) (total F) times pc, as ids base + index. */
static void trace_topk(NlmTraceRec* tr, const uint32_t* f, int n, double pc, int32_t base) {
    uint64_t F = 0;
    int best[NLM_TRACE_TOPK];
    for (int k = 0; k < NLM_TRACE_TOPK; k++) best[k] = -1;
    for (int i = 0; i < n; i++) {
        F += f[i];
        for (int k = 0; k < NLM_TRACE_TOPK; k++) {
            if (best[k] < 0 || f[i] > f[best[k]]) {
                for (int m = NLM_TRACE_TOPK - 1; m > k; m--) best[m] = best[m - 1];
                best[k] = i;
                break;
            }
        }
    }
    for (int k = 0; k < NLM_TRACE_TOPK; k++) {
        tr->top_id[k] = best[k] < 0 ? -1 : base + best[k];
        tr->top_p[k] = best[k] < 0 ? 0.0f : (float)(pc * (double)f[best[k]] / (double)F);
    }
}

/* the spelling cache's symbol coded by the body mixer (speller_code_unknown_with's hook) */
static int code_cache_symbol(void* ctx, Rc* rc, const Fen* counts, int* sym, double* bits) {
    NlmCodec* c = (NlmCodec*)ctx;
    int candidate = 0;
    const int r = bodymix_code(c->bmix, rc, counts, sym, bits, &candidate);
    c->stats[NLM_STAT_BM_CANDIDATES] += candidate;
    return r;
}

/* tr: the token's trace record (NULL when tracing is off); only written, never read. */
static void end_segment(NlmCodec* c);
static void route_reset(RouteFlag* f);

/* nlm_lab_trace_dists: the row of the token traced in tr, or NULL (not recording) */
static float* lab_dists_row(NlmCodec* c, const NlmTraceRec* tr) {
    if (!tr || !c->lab_dists || !c->dists) return NULL;
    return c->dists + (size_t)(tr - c->trace) * (size_t)(c->cfg.C + NLM_NGAP);
}

static int step_token(NlmCodec* c, StepTok* t, uint8_t* gap_scratch, NlmTraceRec* tr) {
    const int dec = c->rc.decoding;
    double* st = c->stats;
    int r, cls, j, n;
    double pc = 0; /* trace: p(class) of the coded class */

    /* 0. the match flag (docs/format.md §3.4): is the token the one the match model predicts?  The
     * network's probability of the predicted token, q, is the APM's input; on a miss the predicted token
     * is excluded from the class and word stages. */
    int32_t pw = -1;
    const uint8_t* pbody = NULL;
    int pblen = 0, pcls = -1, pj = -1, hit = 0;
    const int predicted = c->match_on && tokmatch_predict(c->match, &pw, &pbody, &pblen);
    /* the token cache (§3.6): the network's frequencies (cnet, pnet, wnet) mixed into freq, freq2 */
    const int cache = c->cache_on && c->match_on, bodies = cache && c->cache_on >= 2;
    int bsym = -1, bnew = 0; /* the body mixer: the unknown body's cache symbol (0: new, then bnew its own) */
    uint32_t Fc, Fp = 0, Fcn = 0, Fpn = 0;
    if (cache) {
        tokcache_begin(c->cache);
        Fcn = quant_freqs(c->cnet, lm_class_logits(c->model), c->cfg.C);
        Fc = tokcache_mix_classes(c->cache, c->cnet, Fcn, c->freq);
    } else {
        Fc = quant_freqs(c->freq, lm_class_logits(c->model), c->cfg.C);
    }
    float* const ld = lab_dists_row(c, tr);
    if (ld)
        for (int k = 0; k < c->cfg.C; k++) ld[k] = (float)((double)c->freq[k] / (double)Fc);
    if (predicted) {
        int pn;
        pcls = lm_class_of(c->model, pw);
        const float* zp = lm_word_logits(c->model, pcls, &pn); /* sets pn */
        if (cache) {
            Fpn = quant_freqs(c->pnet, zp, pn);
            Fp = tokcache_mix_words(c->cache, pcls, c->cnet, Fcn, c->pnet, Fpn, c->freq2);
        } else {
            Fp = quant_freqs(c->freq2, zp, pn);
        }
        pj = pw - c->class_start[pcls];
        uint64_t num = (uint64_t)c->freq[pcls] * c->freq2[pj], den = ((uint64_t)Fc * Fp) >> 12;
        uint64_t q = num / (den ? den : 1);
        int p1 = tokmatch_p(c->match, q > 4095 ? 4095 : (int)q, pw == 0); /* clamped to [1, 4095] there */
        if (!dec) hit = t->w == pw && (pw != 0 || (t->blen == pblen && !memcmp(t->body, pbody, (size_t)pblen)));
        double fb = 0;
        if ((r = code_bit(c, &hit, p1, &fb)) < 0) return r;
        tokmatch_learn_flag(c->match, hit);
        st[NLM_STAT_MATCH_PREDS] += 1, st[NLM_STAT_MATCH_BITS] += fb;
        if (tr) tr->bits[NLM_PART_MATCH] = fb;
        if (hit) {
            t->w = pw;
            if (pw == 0) memcpy(t->body, pbody, (size_t)pblen), t->blen = pblen;
            if (cache) tokcache_learn(c->cache, pcls, pj, c->cnet, Fcn, c->pnet[pj], Fpn, &st[NLM_STAT_TC_U1]);
            st[NLM_STAT_MATCH_HITS] += 1;
            if (bits_wanted(c)) st[NLM_STAT_MATCH_NET_COST] += log2((double)Fc * (double)Fp / (double)num);
            if (tr) {
                tr->flags |= NLM_TRACE_MATCH_HIT, tr->word = pw;
                for (int k = 0; k < NLM_TRACE_TOPK; k++) tr->top_id[k] = -1;
            }
        } else if (pw != 0) {
            /* exclusion: the class loses the predicted word's share, the word its frequency */
            uint32_t cut = (uint32_t)(((uint64_t)c->freq[pcls] * c->freq2[pj]) / Fp);
            c->freq[pcls] -= cut, Fc -= cut;
            Fp -= c->freq2[pj], c->freq2[pj] = 0;
        }
    }
    st[NLM_STAT_TOKENS] += 1;

    if (!hit) {
        uint32_t Gn = 0; /* with the cache: the network's total over the coded class (when not pcls) */
        /* 1. class */
        cls = dec ? 0 : lm_class_of(c->model, t->w);
        double cbits = 0;
        if ((r = code_freqs(c, c->freq, c->cfg.C, Fc, &cls, &cbits)) < 0) return r;
        const double class_bits = cbits;
        if (tr) pc = exp2(-class_bits);
        /* 2. word within the class (over the predicted class's frequencies, already made, on a miss) */
        const uint32_t* f = c->freq2;
        uint32_t F = Fp;
        if (cls != pcls) {
            f = c->freq;
            const float* zw = lm_word_logits(c->model, cls, &n); /* sets n */
            if (cache) {
                Gn = quant_freqs(c->wnet, zw, n);
                F = tokcache_mix_words(c->cache, cls, c->cnet, Fcn, c->wnet, Gn, c->freq);
            } else {
                F = quant_freqs(c->freq, zw, n);
            }
        } else {
            n = c->class_start[cls + 1] - c->class_start[cls];
        }
        j = dec ? 0 : t->w - c->class_start[cls];
        if ((r = code_freqs(c, f, n, F, &j, &cbits)) < 0) return r;
        t->w = c->class_start[cls] + j;
        if (cache) {
            const uint32_t gj = cls == pcls ? c->pnet[j] : c->wnet[j], G = cls == pcls ? Fpn : Gn;
            if (bits_wanted(c))
                st[NLM_STAT_TC_NET_COST] += log2(((double)Fcn * (double)G) / ((double)c->cnet[cls] * (double)gj));
            tokcache_learn(c->cache, cls, j, c->cnet, Fcn, gj, G, &st[NLM_STAT_TC_U1]);
        }
        if (tr) trace_topk(tr, f, n, pc, c->class_start[cls]);
        if (t->w == 0) st[NLM_STAT_UNK_BITS] += cbits;
        else st[NLM_STAT_WORD_BITS] += cbits;
        if (tr) {
            tr->word = t->w;
            if (t->w == 0) tr->bits[NLM_PART_UNK] = cbits;
            else tr->bits[NLM_PART_CLASS] = class_bits, tr->bits[NLM_PART_WORD] = cbits - class_bits;
        }
    }

    /* 3. body */
    if (t->w == 0) st[NLM_STAT_UNK_TOKENS] += 1; /* every <unk>, whether the flag or the class stage coded it */
    if (t->w == 0 && !hit) {
        int chit = 0;
        double b2[2] = {0, 0};
        if ((r = speller_code_unknown_with(c->speller, &c->rc, t->body, &t->blen, MAX_BODY,
                                           bodies ? code_cache_symbol : NULL, c, &chit, b2)) < 0)
            return r;
        if (t->blen < 1 || t->blen > MAX_BODY) return NLM_ERR_CORRUPT;
        if (bodies) bnew = speller_body_symbol(c->speller, t->body, t->blen), bsym = chit ? bnew : 0;
        st[NLM_STAT_CACHE_HITS] += chit;
        st[NLM_STAT_SPELLED] += !chit;
        st[NLM_STAT_CACHE_BITS] += b2[0];
        st[NLM_STAT_SPELL_BITS] += b2[1];
        if (tr) {
            tr->bits[NLM_PART_CACHE] = b2[0], tr->bits[NLM_PART_SPELL] = b2[1];
            if (chit) tr->flags |= NLM_TRACE_CACHE_HIT;
        }
    } else if (t->w != 0) {
        if (dec) {
            t->blen = t->w == 1 ? 0 : c->vocab->blen[t->w];
            memcpy(t->body, c->vocab->body[t->w], (size_t)t->blen);
        }
        if (t->w != 1) speller_see_body(c->speller, t->body, t->blen);
    } else {
        speller_see_body(c->speller, t->body, t->blen); /* an unknown body the match predicted */
        if (bodies) bsym = speller_body_symbol(c->speller, t->body, t->blen);
    }

    /* 4. case: words only; a body with an ASCII capital is verbatim and its case is implied */
    int kind = t->w == 1 ? NLM_KIND_END : body_kind(t->body, t->blen);
    int case_coded = 0;
    if (kind == NLM_KIND_WORD) {
        if (lex_has_upper(t->body, t->blen)) {
            t->ccase = 3;
        } else {
            case_coded = 1;
            if (dec) t->ccase = 0;
            double kb = 0;
            if ((r = code_symbol(c, lm_case_logits(c->model, t->w), 3, &t->ccase, &kb)) < 0) return r;
            st[NLM_STAT_CASE_BITS] += kb;
            if (tr) tr->bits[NLM_PART_CASE] = kb, tr->flags |= NLM_TRACE_CASE_CODED;
        }
    } else {
        t->ccase = 0;
    }

    /* 5. gap: the network's distribution blended with the column-aware counts (+ literal run) */
    {
        uint32_t gf[NLM_NGAP];
        int gctx;
        uint32_t F = quant_freqs(c->freq, lm_gap_logits(c->model, t->w), NLM_NGAP);
        uint32_t G = gapmix_freqs(&c->gapmix, gf, c->freq, F, t->blen, hit ? tokmatch_gap(c->match) : NLM_NGAP, &gctx);
        if (ld)
            for (int i = 0; i < NLM_NGAP; i++) ld[c->cfg.C + i] = (float)((double)gf[i] / (double)G);
        double gbits = 0.0;
        if (c->gapmixer_on) {
            const int allowed = t->known ? gapmixer_allowed(t->known) : 0xFF;
            if ((r = gapmixer_code_allowed(c->gm, c->gmt, gf, t->body, t->blen, allowed, dec, &t->gap, gm_code_bit,
                                           c, bits_wanted(c) ? &gbits : NULL)) < 0)
                return r;
        } else {
            if ((r = rc_code_freqs(&c->rc, gf, NLM_NGAP, G, &t->gap)) < 0) return r;
            if (t->gap < 0 || t->gap >= NLM_NGAP) return NLM_ERR_CORRUPT;
            gbits = bits_wanted(c) ? bits_of(gf, t->gap, G) : 0.0;
        }
        st[NLM_STAT_GAP_BITS] += gbits;
        int gl = 0;
        const uint8_t* gb;
        if (t->gap == 7) {
            if (dec) t->gapbuf = gap_scratch;
            /* the statistics accumulate exactly as without a trace; the trace takes the difference */
            const double before = st[NLM_STAT_GAP_BITS];
            if (c->gapmixer_on) {
                if ((r = gapmixer_code_run_known(c->gm, c->gmt, t->body, t->blen, t->known, dec, t->gapbuf, &t->glen,
                                                 MAX_GAP_RUN, gm_code_bit, c,
                                                 bits_wanted(c) ? &st[NLM_STAT_GAP_BITS] : NULL)) < 0)
                    return r;
            } else if ((r = speller_code_gap(c->speller, &c->rc, t->gapbuf, &t->glen, MAX_GAP_RUN,
                                             &st[NLM_STAT_GAP_BITS])) < 0) {
                return r;
            }
            gbits += st[NLM_STAT_GAP_BITS] - before;
            if (t->glen < 1) return NLM_ERR_CORRUPT;
            gb = t->gapbuf;
            gl = t->glen;
        } else {
            gb = lex_gap_bytes(t->gap, &gl);
        }
        gapmix_update(&c->gapmix, gctx, t->gap, gb, gl, t->blen);
        if (c->gapmixer_on) gapmixer_push(c->gm, gb, t->gap == 7 ? 0 : gl, t->body, t->blen); /* a run is in */
        if (tr) tr->bits[NLM_PART_GAP] = gbits, tr->kind = (uint8_t)kind, tr->ccase = (uint8_t)t->ccase,
                tr->gap = (uint8_t)t->gap;
    }

    /* 6. advance (the match model, then the network); 7. dynamic update at the end of a segment.  With
     * end_advance 0 (the formats') the <end> that closes a block does not advance the network: the next block
     * goes on from the state after the last real token (fed <end>, the network expects a new document: a
     * cut that cost 4-6 bytes at most places cost hundreds at some, docs/format.md §3.2) */
    if (c->match_on && (r = tokmatch_push(c->match, t->w, t->body, t->blen, t->gap)) < 0) return r;
    if (cache) tokcache_push(c->cache, t->w, tokmatch_last_id(c->match));
    if (bodies) bodymix_push(c->bmix, bsym, bnew, tokmatch_last_id(c->match));
    if (t->w == 1 && !c->end_advance) return NLM_OK;
    lm_advance(c->model, t->w, t->ccase, t->gap, case_coded);
    if (c->adapt && ++c->seg_fill >= c->cfg.seg_len) end_segment(c);
    return NLM_OK;
}

/* Close the dynamic segment (lm_end_segment) and count it. */
static void end_segment(NlmCodec* c) {
    uint32_t skipped = lm_skipped(c->model);
    lm_end_segment(c->model);
    c->stats[NLM_STAT_SEGMENTS] += 1.0;
    c->stats[NLM_STAT_SKIPPED] += (double)(lm_skipped(c->model) - skipped);
    c->seg_fill = 0;
}

static void end_block(NlmCodec* c) {
    if (c->adapt && c->seg_fill > 0) end_segment(c);
}

/* ---- entry points ---- */

static uint32_t rd_le32(const uint8_t* p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void nlm_model_free(NlmModel* m) {
    if (!m) return;
    lm_weights_free(m->weights);
    lex_vocab_free(&m->vocab);
    free(m->class_start);
    speller_free(m->primed);
    free(m);
}

int nlm_model_set_kn(NlmModel* m, const uint8_t* blob, size_t blob_len) {
    if (!m) return NLM_ERR_STATE;
    return lm_weights_set_kn(m->weights, blob, blob_len);
}

size_t nlm_model_memory(const NlmModel* m) {
    return m ? sizeof *m + lm_weights_memory(m->weights) + (size_t)(m->cfg.C + 1) * 4 +
                   (size_t)m->cfg.V * (sizeof(uint8_t*) + 1) + ((size_t)m->vocab.mask + 1) * 4 + m->vocab_len
             : 0;
}

NlmModel* nlm_model_new(const NlmConfig* cfg, const void* params, int dtype, const uint8_t* ms_le,
                        const uint8_t* vocab_blob, size_t vocab_blob_len, const uint8_t* class_start_le,
                        const uint8_t* speller_prime, size_t speller_prime_len, int* err) {
    int e = NLM_ERR_CONFIG;
    NlmModel* m = NULL;
    if ((e = nlm_selftest()) != NLM_OK) goto fail; /* once per process: this machine computes the format */
    e = NLM_ERR_CONFIG;
    if (!cfg || !params || !ms_le || !class_start_le || !vocab_blob || nlm_param_count(cfg) == 0 ||
        cfg->V > (1 << 22))
        goto fail;
    if (!(m = (NlmModel*)calloc(1, sizeof *m))) { e = NLM_ERR_NOMEM; goto fail; }
    m->cfg = *cfg;
    if (!(m->class_start = (int32_t*)malloc(sizeof(int32_t) * (size_t)(cfg->C + 1)))) { e = NLM_ERR_NOMEM; goto fail; }
    for (int k = 0; k <= cfg->C; k++) m->class_start[k] = (int32_t)rd_le32(class_start_le + 4 * (size_t)k);
    if (m->class_start[0] != 0 || m->class_start[cfg->C] != cfg->V) goto fail;
    for (int k = 0; k < cfg->C; k++) {
        int sz = m->class_start[k + 1] - m->class_start[k];
        if (sz < 1) goto fail;
        if (sz > m->maxclass) m->maxclass = sz;
    }
    float ms[LM_MAX_TENSORS];
    const LmBodyOps* body = lm_body_for(cfg->arch);
    if (lm_tensor_count(body) != 14) goto fail; /* the model file's ms list has 14 floats (docs/model_format.md) */
    for (int t = 0; t < lm_tensor_count(body); t++) { /* the model file's ms list, one per tensor */
        uint32_t u = rd_le32(ms_le + 4 * t);
        memcpy(&ms[t], &u, 4);
    }
    if ((e = lex_vocab_init(&m->vocab, vocab_blob, vocab_blob_len, cfg->V)) < 0) goto fail;
    m->vocab_len = vocab_blob_len;
    for (int32_t id = 2; id < cfg->V; id++)
        if (m->vocab.blen[id] > MAX_BODY) { e = NLM_ERR_VOCAB; goto fail; }
    if (!(m->weights = lm_weights_new(cfg, body, params, dtype, ms, m->class_start, &e))) {
        if (e >= 0) e = NLM_ERR_NOMEM;
        goto fail;
    }
    if (!(m->primed = speller_new(speller_prime, speller_prime_len))) { e = NLM_ERR_NOMEM; goto fail; }
    if (err) *err = NLM_OK;
    return m;
fail:
    nlm_model_free(m);
    if (err) *err = e;
    return NULL;
}

NlmCodec* nlm_codec_new(const NlmModel* model, int adapt, int* err) {
    int e = NLM_OK;
    NlmCodec* c = NULL;
    if ((e = nlm_selftest()) != NLM_OK) goto fail; /* once per process (cached after the first call) */
    if (!model) { e = NLM_ERR_CONFIG; goto fail; }
    if (!(c = (NlmCodec*)calloc(1, sizeof *c))) { e = NLM_ERR_NOMEM; goto fail; }
    rc_enc_init(&c->rc.enc);
    rc_enc_init(&c->shadow);
    c->shared = model;
    c->cfg = model->cfg;
    c->adapt = adapt ? 1 : 0;
    c->vocab = &model->vocab;
    c->class_start = model->class_start;
    int fn = model->maxclass > model->cfg.C ? model->maxclass : model->cfg.C;
    if (fn < NLM_NGAP) fn = NLM_NGAP;
    if (!(c->freq = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)fn))) { e = NLM_ERR_NOMEM; goto fail; }
    if (!(c->model = lm_new(model->weights, c->adapt, &e))) { if (e >= 0) e = NLM_ERR_NOMEM; goto fail; }
    if (!(c->speller = speller_new_shared(model->primed))) { e = NLM_ERR_NOMEM; goto fail; }
    if ((e = speller_set_kind(c->speller, SPELLER_CM)) < 0) goto fail;
    if (!(c->freq2 = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)model->maxclass))) { e = NLM_ERR_NOMEM; goto fail; }
    if (!(c->match = tokmatch_new(model->cfg.V))) { e = NLM_ERR_NOMEM; goto fail; }
    if (!(c->cache = tokcache_new(model->cfg.V, model->cfg.C, model->class_start))) { e = NLM_ERR_NOMEM; goto fail; }
    if (!(c->bmix = bodymix_new())) { e = NLM_ERR_NOMEM; goto fail; }
    if (!(c->cnet = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)model->cfg.C)) ||
        !(c->pnet = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)model->maxclass)) ||
        !(c->wnet = (uint32_t*)malloc(sizeof(uint32_t) * (size_t)model->maxclass))) { e = NLM_ERR_NOMEM; goto fail; }
    c->match_on = 1;
    c->cache_on = 2;
    c->max_tokens = NLM_MAX_BLOCK_TOKENS;
    c->end_advance = 0;
    c->forward = 1;
    c->bits_on = 1;
    if ((e = lm_set_qforward(c->model, 1)) < 0) goto fail;
    return c;
fail:
    if (c) nlm_codec_free(c);
    if (err) *err = e;
    return NULL;
}

size_t nlm_codec_memory(const NlmCodec* c) {
    return c ? sizeof *c + lm_memory(c->model) + (size_t)(c->cfg.C > 8 ? c->cfg.C : 8) * 4 +
                   (size_t)c->shared->maxclass * 12 + (size_t)c->cfg.C * 4 + tokmatch_memory(c->match) +
                   tokcache_memory(c->cache) + bodymix_memory(c->bmix) +
                   (c->gm ? 2 * sizeof *c->gm + sizeof *c->gmt : 0)
             : 0;
}

void nlm_codec_free(NlmCodec* c) {
    if (!c) return;
    if (c->model) lm_free(c->model);
    if (c->speller) speller_free(c->speller);
    tokmatch_free(c->match);
    tokcache_free(c->cache);
    bodymix_free(c->bmix);
    free(c->cnet);
    free(c->pnet);
    free(c->wnet);
    rc_enc_free(&c->rc.enc);
    rc_enc_free(&c->shadow);
    free(c->shadow_out);
    free(c->freq);
    free(c->freq2);
    free(c->toks);
    free(c->trace);
    free(c->dists);
    free(c->gm);
    free(c->gm_saved);
    free(c->gmt);
    free(c->gp0);
    free(c->gp);
    free(c->marks);
    free(c);
}

int nlm_codec_reset(NlmCodec* c) {
    if (!c) return NLM_ERR_STATE;
    lm_reset(c->model);
    speller_reset(c->speller);
    gapmix_reset(&c->gapmix);
    if (c->gapmixer_on) gapmixer_reset(c->gm, c->gmt);
    tokmatch_reset(c->match);
    tokcache_reset(c->cache);
    bodymix_reset(c->bmix);
    route_reset(&c->route);
    c->seg_fill = 0;
    memset(c->stats, 0, sizeof c->stats);
    return NLM_OK;
}

/* The gap mixer on or off, its state made when first needed. */
static int use_gap_mixer(NlmCodec* c, int on) {
    if (on && !c->gm) {
        c->gm = (GapMixer*)malloc(sizeof *c->gm);
        c->gm_saved = (GapMixer*)malloc(sizeof *c->gm_saved);
        c->gmt = (GmTables*)malloc(sizeof *c->gmt);
        c->gp0 = gapmixer_pending_new();
        c->gp = gapmixer_pending_new();
        if (!c->gm || !c->gm_saved || !c->gmt || !c->gp0 || !c->gp) return NLM_ERR_NOMEM;
        gapmixer_tables(c->gmt);
        gapmixer_reset(c->gm_saved, c->gmt); /* a restore before any save finds a reset state */
    }
    c->gapmixer_on = on;
    return NLM_OK;
}

int nlm_codec_reset_for(NlmCodec* c, int version, int mode) {
    if (!c) return NLM_ERR_STATE;
    const NlmFormatRow* row = NULL;
    for (size_t i = 0; i < sizeof NLM_FORMATS / sizeof NLM_FORMATS[0]; i++)
        if (NLM_FORMATS[i].version == version && NLM_FORMATS[i].mode == mode) row = &NLM_FORMATS[i];
    if (!row || (mode == NLM_MODE_STATIC) != !c->adapt) return NLM_ERR_STATE;
    int e = speller_set_kind(c->speller, row->speller);
    if (e < 0) return e;
    c->match_on = row->match > 0;
    if (row->match > 0) tokmatch_set_flag_model(c->match, row->match);
    c->cache_on = row->cache;
    c->end_advance = row->end_advance;
    c->max_tokens = row->max_tokens;
    c->forward = row->forward;
    c->route_on = row->route;
    c->router = NULL;
    c->shadow_ok = 0;
    if ((e = use_gap_mixer(c, row->gap_mixer)) < 0) return e;
    if ((e = lm_set_qforward(c->model, row->forward == 1)) < 0) return e;
    if (c->adapt) {
        if ((e = lm_set_schedule(c->model, row->deep_every, 0, 0)) < 0) return e;
        if ((e = lm_set_rates(c->model, row->rate_a, row->rate_b)) < 0) return e;
    }
    return nlm_codec_reset(c);
}

int nlm_codec_set_match(NlmCodec* c, int level) {
    if (!c || level < 0 || level > 2) return NLM_ERR_STATE;
    c->match_on = level > 0;
    if (level > 0) tokmatch_set_flag_model(c->match, level);
    return nlm_codec_reset(c);
}

int nlm_codec_set_cache(NlmCodec* c, int on) {
    if (!c) return NLM_ERR_STATE;
    if (on < 0 || on > 2) return NLM_ERR_STATE;
    c->cache_on = on;
    return nlm_codec_reset(c);
}

int nlm_codec_set_schedule(NlmCodec* c, int deep_every, int shallow_emb, int skip_permille) {
    if (!c || !c->adapt) return NLM_ERR_STATE;
    int r = lm_set_schedule(c->model, deep_every, shallow_emb, skip_permille);
    return r ? r : nlm_codec_reset(c);
}

int nlm_codec_set_rates(NlmCodec* c, int a, int b) {
    if (!c || !c->adapt) return NLM_ERR_STATE;
    int r = lm_set_rates(c->model, a, b);
    return r ? r : nlm_codec_reset(c);
}

int nlm_codec_set_frozen(NlmCodec* c, int on) {
    if (!c) return NLM_ERR_STATE;
    lm_set_frozen(c->model, on);
    return NLM_OK;
}

int nlm_codec_set_max_tokens(NlmCodec* c, uint32_t n) {
    if (!c) return NLM_ERR_STATE;
    c->max_tokens = n;
    return NLM_OK;
}

int nlm_codec_set_bit_stats(NlmCodec* c, int on) {
    if (!c) return NLM_ERR_STATE;
    c->bits_on = on ? 1 : 0;
    return NLM_OK;
}

int nlm_codec_set_forward(NlmCodec* c, int level) {
    if (!c || level < 0 || level > 1) return NLM_ERR_STATE;
    c->forward = level;
    int e = lm_set_qforward(c->model, level == 1);
    return e < 0 ? e : nlm_codec_reset(c);
}

int nlm_codec_set_end_advance(NlmCodec* c, int on) {
    if (!c) return NLM_ERR_STATE;
    c->end_advance = on ? 1 : 0;
    return nlm_codec_reset(c);
}

int nlm_codec_set_speller(NlmCodec* c, int kind) {
    if (!c) return NLM_ERR_STATE;
    int r = speller_set_kind(c->speller, kind == NLM_SPELLER_CM       ? SPELLER_CM
                                         : kind == NLM_SPELLER_PPM    ? SPELLER_PPM
                                         : kind == NLM_SPELLER_CM_ALL ? SPELLER_CM_ALL
                                                                      : -1);
    if (r < 0) return r;
    return nlm_codec_reset(c);
}

int nlm_codec_save(NlmCodec* c) {
    if (!c) return NLM_ERR_STATE;
    int r;
    if ((r = lm_save(c->model)) < 0) return r;
    if ((r = speller_save(c->speller)) < 0) return r;
    if ((r = tokmatch_save(c->match)) < 0) return r;
    if ((r = tokcache_save(c->cache)) < 0) return r;
    if ((r = bodymix_save(c->bmix)) < 0) return r;
    c->seg_fill_saved = c->seg_fill;
    c->route_saved = c->route;
    c->gapmix_saved = c->gapmix;
    if (c->gapmixer_on) *c->gm_saved = *c->gm;
    memcpy(c->stats_saved, c->stats, sizeof c->stats);
    return NLM_OK;
}

int nlm_codec_restore(NlmCodec* c) {
    if (!c) return NLM_ERR_STATE;
    int r;
    if ((r = lm_restore(c->model)) < 0) return r;
    if ((r = speller_restore(c->speller)) < 0) return r;
    if ((r = tokmatch_restore(c->match)) < 0) return r;
    if ((r = tokcache_restore(c->cache)) < 0) return r;
    if ((r = bodymix_restore(c->bmix)) < 0) return r;
    c->seg_fill = c->seg_fill_saved;
    c->route = c->route_saved;
    c->gapmix = c->gapmix_saved;
    if (c->gapmixer_on) *c->gm = *c->gm_saved;
    memcpy(c->stats, c->stats_saved, sizeof c->stats);
    return NLM_OK;
}

/* The step's input from a lexed token of src (the encoder's, and a routed block's steps run without a coder). */
static void fill_tok(const NlmCodec* c, const uint8_t* src, const NlmLexToken* lt, StepTok* t) {
    t->ccase = lt->ccase;
    t->gap = lt->gap;
    t->gapbuf = (uint8_t*)src + lt->gap_off;
    t->glen = (int)lt->gap_len;
    t->blen = (int)lt->len;
    t->known = NULL;
    if (lt->kind == NLM_KIND_END) {
        t->w = 1;
    } else {
        memcpy(t->body, src + lt->off, lt->len);
        if (lt->kind == NLM_KIND_WORD && lt->ccase < 3) lex_lower(t->body, t->body, t->blen);
        t->w = (lt->kind == NLM_KIND_WORD && lt->ccase == 3) ? 0 : lex_vocab_find(c->vocab, t->body, t->blen);
    }
}

/* ---- the line route (format 17, docs/format.md §3.8; docs/decisions/line-route.md) ----
 * In a tracked group's word-model block whose route byte is 1, each token step starts with the route bit: does
 * the group's byte-model run code the line from here?  Its probability is P(a line starts here) x P(the run's |
 * a line starts here): the first from the gap mixer's node 13 (before the body; 1 where a line is known to start:
 * the block's first token, and the token after a line the run coded), the second from the route table.  A line
 * the run codes runs from where the output stands through the first '\n' after a byte that is not whitespace (or
 * to the block's end), and the token steps then run over its whole tokens without a coder (their route bits
 * too), so the network, the caches and the gap mixer are where they would be had the word model coded them.
 * Otherwise the token step codes the token as the current format does; its gap's first bytes are known after a
 * line the run coded.  The run learns every byte of the block in order.  The encoder codes each line both ways
 * (logged, RC_LOG), weighs them in integer bits and replays the cheaper.
 * Learning: node 13 learns after each token's gap is known (where a line is not known to start); the route table
 * learns a line start's route when the next line start is found, so that within a line its state is the same
 * whether the word model or the run coded the line start (the encoder weighs both before it codes the bit). */
static int route_ctx(const NlmCodec* c, int known) {
    return c->route.last | gapmixer_line_class(c->gm) << 2 | known << 5;
}

static int route_p(const RouteFlag* f, int ctx) {
    int p = f->q[ctx] >> 4;
    return p < 1 ? 1 : p > 4095 ? 4095 : p;
}

static void route_reset(RouteFlag* f) {
    for (int i = 0; i < ROUTE_CTX; i++) f->q[i] = 32768, f->n[i] = 0;
    f->last = 0;
    f->pend_ctx = -1, f->pend_y = 0;
}

/* A line start was found: learn the one before it, and keep this one (ctx, y) for the next. */
static void route_apply(RouteFlag* f, int ctx, int y) {
    if (f->pend_ctx >= 0) {
        const int c = f->pend_ctx;
        const int32_t target = f->pend_y ? 65535 : 0;
        f->q[c] = (uint16_t)(f->q[c] + (int32_t)(((int64_t)(target - f->q[c]) * 2) / (2 * f->n[c] + 3)));
        if (f->n[c] < ROUTE_LIMIT) f->n[c]++;
        f->last = (f->last << 1 | f->pend_y) & 3;
    }
    f->pend_ctx = ctx, f->pend_y = y;
}

static int is_ws(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'; }

static int gap_has_nl(const uint8_t* src, const NlmLexToken* lt) {
    return lt->gap_len && memchr(src + lt->gap_off, '\n', lt->gap_len) != NULL;
}

/* Where a token of a line the encoder logged starts (line_steps): its route bit's op, context, probability. */
typedef struct LineMark {
    size_t op;
    int ctx, p;
} LineMark;

/* The route bit's probability before a token (known: a line is known to start here; else node 13's prediction is
 * kept in gp for its update), and the route table's context in *ctx. */
static int route_bit_p(NlmCodec* c, int known, GmPending* gp, int* ctx) {
    *ctx = route_ctx(c, known);
    const int pr = route_p(&c->route, *ctx);
    if (known) return pr;
    const int pl = gapmixer_newline_predict(c->gm, c->gmt, gp);
    const int p = (pl * pr) >> 12;
    return p < 1 ? 1 : p;
}

/* The token steps of tokens toks[from..to) of src (the encoder's input, or a decoded line) in the encoder's
 * direction, with the coder as it is set (RC_LOG: the word model's coding of a line, RC_DISCARD: a line the
 * run coded).  With first_coded the first token's route bit was coded before: known0 says whether a line was
 * known to start there (kn0: what was known of its gap), and gp0 is node 13's prediction for it otherwise.  Every
 * other token codes its route bit (0) first. */
static int line_steps(NlmCodec* c, const uint8_t* src, const NlmLexToken* toks, int64_t from, int64_t to,
                      int first_coded, int known0, const GmKnown* kn0, const GmPending* gp0, LineMark* marks,
                      NlmTraceRec* tr) {
    for (int64_t k = from; k < to; k++) {
        int r, ctx;
        const GmPending* gp = gp0;
        uint32_t route_cost = 0;
        if (k > from || !first_coded) {
            const int p = route_bit_p(c, 0, c->gp, &ctx);
            if (marks) marks[k - from - 1] = (LineMark){c->rc.enc.nops, ctx, p};
            if ((r = rc_enc_bit(&c->rc.enc, 0, (uint32_t)p)) < 0) return r;
            if (tr) route_cost = rc_cost((uint32_t)(4096 - p), 4096);
            gp = c->gp;
        }
        StepTok t;
        fill_tok(c, src, &toks[k], &t);
        if (toks[k].gap == 7 && toks[k].gap_len > MAX_GAP_RUN) return NLM_ERR_CORRUPT;
        t.known = k == from && first_coded ? kn0 : NULL;
        if ((r = step_token(c, &t, NULL, tr ? &tr[k] : NULL)) < 0) return r;
        if (tr) tr[k].bits[NLM_PART_ROUTE] = (double)route_cost / 65536.0;
        if (!(k == from && first_coded && known0)) gapmixer_newline_learn(c->gm, gp, gap_has_nl(src, &toks[k]));
    }
    return NLM_OK;
}

/* The trace (nlm.h NLM_PART_RUN) of tokens toks[s..u) of a line the run coded from byte pos on, its bytes logged
 * from op `split` on (8 ops a byte): the word model's parts and the route's cleared (the route bit that handed
 * the line to the run is added by the caller), the run's bits of each token's bytes. */
static void trace_run_tokens(NlmTraceRec* tr, const NlmLexToken* toks, int64_t s, int64_t u, size_t pos,
                             const RcEnc* e, size_t split) {
    for (int64_t t = s; t < u; t++) {
        NlmTraceRec* r = &tr[t];
        for (int p = 0; p <= NLM_PART_ROUTE; p++) r->bits[p] = 0;
        r->flags |= NLM_TRACE_RUN;
        const size_t a = toks[t].gap_off > pos ? toks[t].gap_off : pos, b = toks[t].off + toks[t].len;
        if (b > a) r->bits[NLM_PART_RUN] += (double)rc_ops_cost(e, split + 8 * (a - pos), split + 8 * (b - pos)) / 65536.0;
    }
}

/* The run's coding of the whole block, made alongside: a byte-model payload continuing the run (§9.1). */
static int shadow_finish(NlmCodec* c) {
    int r = rc_enc_finish(&c->shadow);
    if (r < 0) return r;
    uint8_t* o = (uint8_t*)realloc(c->shadow_out, c->shadow.len + 1);
    if (!o) return NLM_ERR_NOMEM;
    c->shadow_out = o;
    o[0] = 0; /* the run byte: the block continues the run */
    memcpy(o + 1, c->shadow.buf, c->shadow.len);
    c->shadow_len = c->shadow.len + 1;
    c->shadow_ok = 1;
    return NLM_OK;
}

/* Encoder, a block of a tracked group with a router (c->toks: its ntok tokens). */
static int64_t encode_routed(NlmCodec* c, const uint8_t* src, size_t n, int64_t ntok) {
    RcEnc* e = &c->rc.enc;
    CmModel* bm = bytecoder_run(c->router);
    if (!bm) return NLM_ERR_STATE;
    int r = 0;
    rc_enc_reset(&c->shadow);
    c->shadow_ok = 0;
    NlmTraceRec* const tr = c->trace_on ? c->trace : NULL;
    if (tr) {
        for (int64_t k = 0; k < ntok; k++) {
            memset(&tr[k], 0, sizeof tr[k]);
            tr[k].off = (uint32_t)c->toks[k].gap_off; /* the gap precedes the body */
            tr[k].len = (uint32_t)(c->toks[k].off + c->toks[k].len - c->toks[k].gap_off);
        }
        c->trace_n = (size_t)ntok;
    }
    if (!c->route_lines) {
        for (int64_t k = 0; k < ntok; k++) {
            StepTok t;
            fill_tok(c, src, &c->toks[k], &t);
            if ((r = step_token(c, &t, NULL, tr ? &tr[k] : NULL)) < 0) return r;
        }
        e->sink = RC_LOG, e->nops = 0;
        r = cm_code(bm, &c->rc, (uint8_t*)src, n);
        e->sink = RC_CODE;
        if (r < 0) return r;
        if ((r = rc_enc_replay(&c->shadow, e, 0, e->nops)) < 0) return r;
        return shadow_finish(c);
    }
    if (c->marks_cap < (size_t)ntok) {
        free(c->marks);
        c->marks_cap = 0;
        if (!(c->marks = (LineMark*)malloc(sizeof(LineMark) * (size_t)ntok))) return NLM_ERR_NOMEM;
        c->marks_cap = (size_t)ntok;
    }
    size_t pos = 0, prelen = 0; /* bytes coded; of them, the start of the next token's gap (a run's line end) */
    int64_t k = 0;
    while (k < ntok) {
        /* token k starts a line: the block's first, one after a line the run coded, or its gap holds a '\n' */
        const int known = k == 0 || prelen > 0;
        const GmKnown kn = {src + pos - prelen, (int)prelen};
        int ctx;
        const int p = route_bit_p(c, known, c->gp0, &ctx);
        route_apply(&c->route, -1, 0); /* the line start before this one is learnt (this one: below) */
        int64_t u = k + 1; /* the line: tokens k..u-1 */
        while (u < ntok && !gap_has_nl(src, &c->toks[u])) u++;
        const size_t e1 = c->toks[u - 1].off + c->toks[u - 1].len; /* the end of its last body */
        const size_t e2 = u < ntok ? (size_t)((const uint8_t*)memchr(src + c->toks[u].gap_off, '\n',
                                                                     c->toks[u].gap_len) - src) + 1
                                   : n; /* through the '\n' that ends it */
        /* both codings, logged: the word model's, then the run's (which learns the bytes either way) */
        e->sink = RC_LOG, e->nops = 0;
        r = line_steps(c, src, c->toks, k, u, 1, known, &kn, c->gp0, c->marks, tr);
        const size_t split = e->nops;
        if (r >= 0) r = cm_code(bm, &c->rc, (uint8_t*)src + pos, e1 - pos);
        e->sink = RC_CODE;
        if (r < 0) return r;
        if (e->nops - split != 8 * (e1 - pos)) return NLM_ERR_STATE; /* the run codes 8 bits a byte (below) */
        /* the cheapest of: the word model codes the line (y 0, j u), the run codes it (y 1), or the word model
         * codes its tokens k..j-1 and the run the rest from token j's gap (y 0, then token j's route bit 1) */
        const uint64_t c0 = rc_cost((uint32_t)(4096 - p), 4096), c1 = rc_cost((uint32_t)p, 4096);
        const uint64_t wc = rc_ops_cost(e, 0, split), bc = rc_ops_cost(e, split, e->nops);
        uint64_t best = wc + c0, wpre = 0, bpre = 0;
        int64_t j = u;
        size_t wop = 0, bpos = pos;
        int y = bc + c1 < best;
        if (y) best = bc + c1;
        for (int64_t t = k + 1; t < u; t++) {
            const LineMark* mk = &c->marks[t - k - 1];
            const size_t g = c->toks[t].gap_off;
            wpre += rc_ops_cost(e, wop, mk->op), wop = mk->op;
            bpre += rc_ops_cost(e, split + 8 * (bpos - pos), split + 8 * (g - pos)), bpos = g;
            const uint64_t cand = c0 + wpre + rc_cost((uint32_t)mk->p, 4096) + (bc - bpre);
            if (cand < best) best = cand, j = t, y = 0;
        }
        if ((r = rc_enc_bit(e, y, (uint32_t)p)) < 0) return r;
        c->route.pend_ctx = ctx, c->route.pend_y = y;
        c->stats[NLM_STAT_ROUTE_LINES] += 1;
        c->stats[NLM_STAT_ROUTE_WORD_BITS] += (double)wc / 65536.0;
        c->stats[NLM_STAT_ROUTE_CODED_BITS] += (double)best / 65536.0;
        if (bits_wanted(c)) { /* the route bits coded: this one, and the word model's tokens' (0, and 1 at j) */
            uint64_t rb = y ? c1 : c0;
            for (int64_t t = k + 1; !y && t < u && t <= j; t++)
                rb += rc_cost((uint32_t)(t == j ? c->marks[t - k - 1].p : 4096 - c->marks[t - k - 1].p), 4096);
            c->stats[NLM_STAT_ROUTE_BITS] += (double)rb / 65536.0;
        }
        c->stats[y ? NLM_STAT_ROUTE_RUN_LINES : NLM_STAT_ROUTE_SPLIT_LINES] += y || j < u;
        if (tr) trace_run_tokens(tr, c->toks, y ? k : j, y || j < u ? u : j, pos, e, split);
        if (tr) tr[k].bits[NLM_PART_ROUTE] += (double)(y ? c1 : c0) / 65536.0;
        if (y || j < u) { /* the run codes the line (from token j's gap) through its '\n' */
            size_t from = split;
            if (!y) { /* the word model's tokens k..j-1, then token j's route bit 1 */
                const LineMark* mk = &c->marks[j - k - 1];
                if ((r = rc_enc_replay(e, e, 0, mk->op)) < 0 || (r = rc_enc_bit(e, 1, (uint32_t)mk->p)) < 0) return r;
                route_apply(&c->route, mk->ctx, 1);
                from = split + 8 * (c->toks[j].gap_off - pos);
                if (tr) tr[j].bits[NLM_PART_ROUTE] += (double)rc_cost((uint32_t)mk->p, 4096) / 65536.0;
            }
            e->sink = RC_LOG;
            const size_t tail = e->nops;
            r = cm_code(bm, &c->rc, (uint8_t*)src + e1, e2 - e1);
            e->sink = RC_CODE;
            if (r < 0) return r;
            if (tr && u < ntok) { /* the line's '\n' (and the whitespace before it): the next token's gap */
                tr[u].bits[NLM_PART_RUN] += (double)rc_ops_cost(e, tail, e->nops) / 65536.0;
                if (e2 == n) tr[u].flags |= NLM_TRACE_RUN; /* (its END, stepped below, codes nothing) */
            }
            if ((r = rc_enc_replay(e, e, from, e->nops)) < 0) return r;
            c->stats[NLM_STAT_ROUTE_RUN_BYTES] += (double)(e2 - (y ? pos : c->toks[j].gap_off));
            pos = e2, prelen = e2 - e1;
            if (pos == n && u < ntok) { /* the block ends with the line's '\n': its END is the line's too */
                e->sink = RC_DISCARD;
                r = line_steps(c, src, c->toks, u, ntok, 0, 0, NULL, NULL, NULL, NULL);
                e->sink = RC_CODE;
                if (r < 0) return r;
                u = ntok;
            }
        } else {
            if ((r = rc_enc_replay(e, e, 0, split)) < 0) return r;
            pos = e1, prelen = 0;
        }
        if ((r = rc_enc_replay(&c->shadow, e, split, e->nops)) < 0) return r;
        k = u;
    }
    return shadow_finish(c);
}

/* Decoder, a block of a tracked group with a router: writes dst[0..dst_len) (the caller checks the length and
 * the payload's end). */
static int64_t decode_routed(NlmCodec* c, int on, uint8_t* dst, size_t dst_len, uint8_t* gap_scratch, size_t* out) {
    Rc* rc = &c->rc;
    CmModel* bm = bytecoder_run(c->router);
    if (!bm) return NLM_ERR_STATE;
    int r;
    size_t pos = 0, fed = 0, q = 0, prelen = 0; /* output; learnt by the run; the next token's start */
    uint64_t k = 0;                             /* tokens stepped */
    if (c->toks_cap < dst_len + 1) {
        free(c->toks);
        c->toks_cap = dst_len + 1;
        if (!(c->toks = (NlmLexToken*)malloc(sizeof(NlmLexToken) * c->toks_cap))) {
            c->toks_cap = 0;
            return NLM_ERR_NOMEM;
        }
    }
    for (;;) {
        if (k > dst_len || (c->max_tokens && k >= c->max_tokens)) return NLM_ERR_CORRUPT;
        const int known = k == 0 || prelen > 0;
        const GmKnown kn = {dst + q, (int)prelen};
        int y = 0, ctx = -1;
        if (on) {
            const int p = route_bit_p(c, known, c->gp0, &ctx);
            if ((r = rc_dec_bit(&rc->dec, (uint32_t)p, &y)) < 0) return r;
        }
        if (y) { /* a line the run codes */
            route_apply(&c->route, ctx, 1);
            if (fed < pos && cm_learn_block(bm, dst + fed, pos - fed) < 0) return NLM_ERR_CORRUPT;
            int seen = 0;
            while (pos < dst_len) {
                if ((r = cm_code(bm, rc, dst + pos, 1)) < 0) return r == NLM_ERR_NOMEM ? r : NLM_ERR_CORRUPT;
                const uint8_t b = dst[pos++];
                if (!is_ws(b)) seen = 1;
                else if (b == '\n' && seen) break;
            }
            fed = pos;
            int64_t nt = nlm_lex(dst + q, pos - q, c->toks, c->toks_cap);
            if (nt < 1) return NLM_ERR_CORRUPT;
            const int done = pos == dst_len;
            const int64_t steps = done ? nt : nt - 1; /* a line that does not end the block: its '\n' is in the
                                                       * gap of the next line's first token */
            if (c->max_tokens && k + (uint64_t)steps > c->max_tokens) return NLM_ERR_CORRUPT;
            rc->decoding = 0, rc->enc.sink = RC_DISCARD;
            r = line_steps(c, dst + q, c->toks, 0, steps, 1, known, &kn, c->gp0, NULL, NULL);
            rc->decoding = 1, rc->enc.sink = RC_CODE;
            if (r < 0) return r == NLM_ERR_NOMEM ? r : NLM_ERR_CORRUPT;
            k += (uint64_t)steps;
            if (done) break;
            q += c->toks[nt - 1].gap_off;
            prelen = pos - q;
            continue;
        }
        StepTok t;
        t.gapbuf = NULL;
        t.glen = 0;
        t.blen = 0;
        t.known = on && prelen ? &kn : NULL;
        if ((r = step_token(c, &t, gap_scratch, NULL)) < 0) return r;
        k++;
        int gl;
        const uint8_t* g = t.gap == 7 ? t.gapbuf : lex_gap_bytes(t.gap, &gl);
        if (t.gap == 7) gl = t.glen;
        if (on) {
            const int nl = memchr(g, '\n', (size_t)gl) != NULL;
            if (!known) gapmixer_newline_learn(c->gm, c->gp0, nl);
            if (known || nl) route_apply(&c->route, ctx, 0);
        }
        if ((size_t)gl < prelen) return NLM_ERR_CORRUPT;
        if ((size_t)gl - prelen + (size_t)t.blen > dst_len - pos) return NLM_ERR_CORRUPT;
        memcpy(dst + pos, g + prelen, (size_t)gl - prelen);
        pos += (size_t)gl - prelen;
        memcpy(dst + pos, t.body, (size_t)t.blen);
        lex_recase(dst + pos, t.blen, t.ccase);
        pos += (size_t)t.blen;
        q = pos, prelen = 0;
        if (t.w == 1) break;
        if (rc_dec_past_end(&rc->dec) > MAX_PAST_END) return NLM_ERR_CORRUPT;
    }
    if (fed < pos && cm_learn_block(bm, dst + fed, pos - fed) < 0) return NLM_ERR_CORRUPT;
    *out = pos;
    return NLM_OK;
}

int64_t nlm_encode_block(NlmCodec* c, const uint8_t* src, size_t n) {
    if (!c || (n && !src)) return NLM_ERR_STATE;
    c->trace_n = 0; /* the trace describes this call only, even when it refuses the block */
    c->shadow_ok = 0;
    if (n > 0xFFFFFFF0u) return NLM_ERR_CAPACITY;
    if (c->toks_cap < n + 1) {
        free(c->toks);
        c->toks_cap = n + 1;
        if (!(c->toks = (NlmLexToken*)malloc(sizeof(NlmLexToken) * c->toks_cap))) { c->toks_cap = 0; return NLM_ERR_NOMEM; }
    }
    int64_t ntok = nlm_lex(src, n, c->toks, c->toks_cap);
    if (ntok < 0) return ntok;
    /* Atomic refusal: everything that makes a block uncodable is found here, before any state (model,
     * speller, gap counts, statistics) is touched, so a refused block leaves the codec as it was. */
    if (c->max_tokens && ntok > (int64_t)c->max_tokens) return NLM_ERR_UNSUPPORTED;
    for (int64_t k = 0; k < ntok; k++)
        if (c->toks[k].gap == 7 && c->toks[k].gap_len > MAX_GAP_RUN) return NLM_ERR_UNSUPPORTED;
    if (c->trace_on && c->trace_cap < (size_t)ntok) {
        free(c->trace);
        c->trace_cap = 0;
        if (!(c->trace = (NlmTraceRec*)malloc(sizeof(NlmTraceRec) * (size_t)ntok))) return NLM_ERR_NOMEM;
        c->trace_cap = (size_t)ntok;
    }
    if (c->trace_on && c->lab_dists && c->dists_cap < (size_t)ntok) {
        free(c->dists);
        c->dists_cap = 0;
        if (!(c->dists = (float*)malloc(sizeof(float) * (size_t)ntok * (size_t)(c->cfg.C + NLM_NGAP))))
            return NLM_ERR_NOMEM;
        c->dists_cap = (size_t)ntok;
    }
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    c->rc.decoding = 0;
    rc_enc_reset(&c->rc.enc);
    int64_t r = NLM_OK;
    if (c->router) {
        r = encode_routed(c, src, n, ntok);
        ntok = 0; /* the tokens are coded */
    }
    for (int64_t k = 0; k < ntok && r >= 0; k++) {
        const NlmLexToken* lt = &c->toks[k];
        StepTok t;
        fill_tok(c, src, lt, &t);
        NlmTraceRec* tr = NULL;
        if (c->trace_on) {
            tr = &c->trace[k];
            memset(tr, 0, sizeof *tr);
            tr->off = lt->gap_off; /* the gap precedes the body */
            tr->len = lt->off + lt->len - lt->gap_off;
            c->trace_n = (size_t)k + 1;
        }
        r = step_token(c, &t, NULL, tr);
    }
    if (r >= 0) {
        end_block(c);
        r = rc_enc_finish(&c->rc.enc);
        if (r >= 0 && c->router) r = rc_enc_prefix(&c->rc.enc, (uint8_t)c->route_lines); /* the route byte */
        if (r >= 0) r = (int64_t)c->rc.enc.len;
    }
    nlm_fpenv_leave(&fe);
    return r;
}

const uint8_t* nlm_codec_output(const NlmCodec* c, size_t* len) {
    if (!c) { *len = 0; return NULL; }
    *len = c->rc.enc.len;
    return c->rc.enc.buf;
}

int64_t nlm_decode_block(NlmCodec* c, const uint8_t* src, size_t n, uint8_t* dst, size_t dst_len) {
    if (!c || (n && !src) || (dst_len && !dst)) return NLM_ERR_STATE;
    uint8_t* gap_scratch = (uint8_t*)malloc(MAX_GAP_RUN);
    if (!gap_scratch) return NLM_ERR_NOMEM;
    NlmFpEnv fe;
    nlm_fpenv_enter(&fe);
    c->rc.decoding = 1;
    int64_t r = NLM_OK;
    size_t pos = 0;
    int route = 0;
    if (c->router) { /* the route byte, then the coder's bytes */
        if (n < 1 || src[0] > 1) {
            r = NLM_ERR_CORRUPT;
            goto finish;
        }
        route = src[0];
        src++, n--;
    }
    rc_dec_init(&c->rc.dec, src, n);
    if (c->router) {
        r = decode_routed(c, route, dst, dst_len, gap_scratch, &pos);
        goto finish;
    }
    /* Every token but END writes at least one body byte, so a valid block has at most dst_len + 1 tokens;
     * with a token bound (§3.5) also at most max_tokens (END included), which bounds the work a forged block
     * costs. */
    for (size_t k = 0; r >= 0; k++) {
        if (k > dst_len || (c->max_tokens && k >= c->max_tokens)) { r = NLM_ERR_CORRUPT; break; }
        StepTok t;
        t.gapbuf = NULL;
        t.glen = 0;
        t.blen = 0;
        t.known = NULL;
        if ((r = step_token(c, &t, gap_scratch, NULL)) < 0) break;
        int gl;
        const uint8_t* g = t.gap == 7 ? t.gapbuf : lex_gap_bytes(t.gap, &gl);
        if (t.gap == 7) gl = t.glen;
        if ((size_t)gl + (size_t)t.blen > dst_len - pos) { r = NLM_ERR_CORRUPT; break; }
        memcpy(dst + pos, g, (size_t)gl);
        pos += (size_t)gl;
        memcpy(dst + pos, t.body, (size_t)t.blen);
        lex_recase(dst + pos, t.blen, t.ccase);
        pos += (size_t)t.blen;
        if (t.w == 1) break;
        if (rc_dec_past_end(&c->rc.dec) > MAX_PAST_END) { r = NLM_ERR_CORRUPT; break; }
    }
finish:
    if (r >= 0) end_block(c);
    if (r >= 0 && pos != dst_len) r = NLM_ERR_DST_SIZE;
    if (r >= 0 && (rc_dec_past_end(&c->rc.dec) > MAX_PAST_END || rc_dec_finish(&c->rc.dec) < 0)) r = NLM_ERR_CORRUPT;
    nlm_fpenv_leave(&fe);
    free(gap_scratch);
    return r < 0 ? r : (int64_t)dst_len;
}

int nlm_codec_set_route(NlmCodec* c, int on) {
    if (!c || !c->gapmixer_on) return NLM_ERR_STATE;
    c->route_on = on ? 1 : 0;
    c->router = NULL;
    c->shadow_ok = 0;
    return nlm_codec_reset(c);
}

int nlm_codec_set_router(NlmCodec* c, NlmByteCoder* b, int lines) {
    if (!c || (b && (!c->route_on || !c->gapmixer_on)) || lines < 0 || lines > 1) return NLM_ERR_STATE;
    c->router = b;
    c->route_lines = lines;
    c->shadow_ok = 0;
    return NLM_OK;
}

int nlm_format_routes(int version) {
    const int r = nlm_format_route(version);
    return r < 0 ? NLM_ERR_STATE : r;
}

const uint8_t* nlm_codec_route_byte_payload(const NlmCodec* c, size_t* len) {
    const int ok = c && c->shadow_ok;
    if (len) *len = ok ? c->shadow_len : 0;
    return ok ? c->shadow_out : NULL;
}

int nlm_codec_stats(const NlmCodec* c, double* out, size_t n) {
    if (!c || !out) return NLM_ERR_STATE;
    size_t k = n < NLM_STAT_COUNT ? n : NLM_STAT_COUNT;
    memcpy(out, c->stats, sizeof(double) * k);
    return (int)k;
}

int nlm_codec_trace(NlmCodec* c, int on) {
    if (!c) return NLM_ERR_STATE;
    c->trace_on = on ? 1 : 0;
    if (!on) {
        free(c->trace);
        c->trace = NULL;
        c->trace_cap = c->trace_n = 0;
    }
    return NLM_OK;
}

const NlmTraceRec* nlm_codec_trace_records(const NlmCodec* c, size_t* n) {
    if (!c) { if (n) *n = 0; return NULL; }
    if (n) *n = c->trace_n;
    return c->trace;
}

int nlm_lab_trace_dists(NlmCodec* c, int on) {
    if (!c) return NLM_ERR_STATE;
    c->lab_dists = on ? 1 : 0;
    if (!on) {
        free(c->dists);
        c->dists = NULL;
        c->dists_cap = 0;
    }
    return NLM_OK;
}

const float* nlm_lab_trace_dists_records(const NlmCodec* c, size_t* n, size_t* width) {
    const int ok = c && c->lab_dists && c->dists;
    if (n) *n = ok ? c->trace_n : 0;
    if (width) *width = c ? (size_t)(c->cfg.C + NLM_NGAP) : 0;
    return ok ? c->dists : NULL;
}
