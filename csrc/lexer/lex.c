/* lex.c: the lexer of docs/format.md §1 and the vocabulary hash.
 *
 * Owns: the token grammar (gap symbols, word/number/symbol bodies, case classes) and the inverse helpers
 * the decoder uses.  Not here: anything about probabilities or coding (csrc/codec/codec.c).
 * Pure integer code; one pass, O(n).
 */
#include "common/fpenv.h" /* first: FP contraction off, FP environment guard */
#include "lexer/lex.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t GAP_BYTES[7][2] = {{0, 0}, {' ', 0}, {' ', ' '}, {'\n', 0}, {'\n', '\n'}, {'\r', '\n'}, {'\t', 0}};
static const int GAP_LEN[7] = {0, 1, 2, 1, 2, 2, 1};

const uint8_t* lex_gap_bytes(int gap, int* len) {
    *len = (gap >= 0 && gap < 7) ? GAP_LEN[gap] : 0;
    return (gap >= 0 && gap < 7) ? GAP_BYTES[gap] : GAP_BYTES[0];
}

int lex_is_space(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'; }

static int is_ascii_letter(uint8_t b) { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z'); }
static int is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
static int is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

/* Length of the word character at s[0..n) (1 for an ASCII letter, 2 for a UTF-8 letter U+00C0-U+024F
 * except U+00D7 and U+00F7), or 0 if it is not a word character. */
static int word_char_len(const uint8_t* s, size_t n) {
    uint8_t b = s[0];
    if (is_ascii_letter(b)) return 1;
    if (n < 2 || !is_cont(s[1])) return 0;
    if (b == 0xC3) return (s[1] == 0x97 || s[1] == 0xB7) ? 0 : 2;
    if (b >= 0xC4 && b <= 0xC8) return 2;
    if (b == 0xC9) return s[1] <= 0x8F ? 2 : 0;
    return 0;
}

/* Length of the valid UTF-8 sequence starting at s (2..4), or 0 if s[0] does not start one. */
static int utf8_len(const uint8_t* s, size_t n) {
    uint8_t b = s[0];
    if (b >= 0xC2 && b <= 0xDF) return (n >= 2 && is_cont(s[1])) ? 2 : 0;
    if (b >= 0xE0 && b <= 0xEF) {
        if (n < 3 || !is_cont(s[1]) || !is_cont(s[2])) return 0;
        if (b == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
        if (b == 0xED && s[1] >= 0xA0) return 0; /* surrogate */
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (n < 4 || !is_cont(s[1]) || !is_cont(s[2]) || !is_cont(s[3])) return 0;
        if (b == 0xF0 && s[1] < 0x90) return 0; /* overlong */
        if (b == 0xF4 && s[1] >= 0x90) return 0; /* > U+10FFFF */
        return 4;
    }
    return 0;
}

static int gap_symbol(const uint8_t* g, size_t n) {
    for (int s = 0; s < 7; s++)
        if ((size_t)GAP_LEN[s] == n && memcmp(g, GAP_BYTES[s], n) == 0) return s;
    return 7;
}

int lex_has_upper(const uint8_t* body, int n) {
    for (int i = 0; i < n; i++)
        if (body[i] >= 'A' && body[i] <= 'Z') return 1;
    return 0;
}

static int word_case(const uint8_t* w, int n) {
    int upper = 0, letters = 0;
    for (int i = 0; i < n; i++) {
        if (w[i] >= 'A' && w[i] <= 'Z') upper++, letters++;
        else if (w[i] >= 'a' && w[i] <= 'z') letters++;
    }
    if (upper == 0) return 0;
    int first_upper = w[0] >= 'A' && w[0] <= 'Z';
    if (first_upper && upper == 1) return 1;
    if (first_upper && upper == letters && letters >= 2) return 2;
    return 3;
}

void lex_lower(uint8_t* dst, const uint8_t* src, int n) {
    for (int i = 0; i < n; i++) dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? (uint8_t)(src[i] + 32) : src[i];
}

void lex_recase(uint8_t* body, int n, int ccase) {
    if (ccase == 1 && n > 0 && body[0] >= 'a' && body[0] <= 'z') body[0] = (uint8_t)(body[0] - 32);
    if (ccase == 2)
        for (int i = 0; i < n; i++)
            if (body[i] >= 'a' && body[i] <= 'z') body[i] = (uint8_t)(body[i] - 32);
}

int64_t nlm_lex(const uint8_t* src, size_t n, NlmLexToken* out, size_t cap) {
    size_t i = 0, k = 0;
    for (;;) {
        size_t gs = i;
        while (i < n && lex_is_space(src[i])) i++;
        if (k >= cap) return NLM_ERR_CAPACITY;
        NlmLexToken* t = &out[k++];
        t->gap_off = (uint32_t)gs;
        t->gap_len = (uint32_t)(i - gs);
        t->gap = (uint8_t)gap_symbol(src + gs, i - gs);
        t->off = (uint32_t)i;
        t->ccase = 0;
        t->pad = 0;
        if (i == n) {
            t->kind = NLM_KIND_END;
            t->len = 0;
            return (int64_t)k;
        }
        int wl = word_char_len(src + i, n - i);
        if (wl) {
            size_t s = i;
            while (i < n && (wl = word_char_len(src + i, n - i)) != 0 && i + wl - s <= NLM_MAX_WORD) i += wl;
            t->kind = NLM_KIND_WORD;
            t->len = (uint32_t)(i - s);
            t->ccase = (uint8_t)word_case(src + s, (int)(i - s));
        } else if (is_digit(src[i])) {
            size_t s = i;
            while (i < n && is_digit(src[i]) && i - s < NLM_MAX_NUMBER) i++;
            t->kind = NLM_KIND_NUMBER;
            t->len = (uint32_t)(i - s);
        } else {
            int ul = src[i] >= 0x80 ? utf8_len(src + i, n - i) : 0;
            t->kind = NLM_KIND_SYMBOL;
            t->len = (uint32_t)(ul ? ul : 1);
            i += t->len;
        }
    }
}

/* ---- vocabulary hash ---- */

static uint32_t hash_bytes(const uint8_t* s, int n) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < n; i++) h = (h ^ s[i]) * 16777619u;
    return h;
}

int lex_vocab_init(LexVocab* v, const uint8_t* blob, size_t len, int32_t V) {
    memset(v, 0, sizeof *v);
    if (V < 2 || V > (1 << 24)) return NLM_ERR_VOCAB;
    v->V = V;
    v->blob = (uint8_t*)malloc(len ? len : 1);
    v->body = (const uint8_t**)malloc(sizeof(uint8_t*) * (size_t)V);
    v->blen = (uint8_t*)malloc((size_t)V);
    uint32_t size = 16;
    while (size < (uint32_t)V * 2u) size <<= 1;
    v->mask = size - 1;
    v->slots = (int32_t*)malloc(sizeof(int32_t) * size);
    if (!v->blob || !v->body || !v->blen || !v->slots) { lex_vocab_free(v); return NLM_ERR_NOMEM; }
    if (len) memcpy(v->blob, blob, len);
    memset(v->slots, 0xFF, sizeof(int32_t) * size);
    size_t p = 0;
    for (int32_t id = 0; id < V; id++) {
        if (p >= len) { lex_vocab_free(v); return NLM_ERR_VOCAB; }
        int bl = v->blob[p++];
        if (p + (size_t)bl > len || (id < 2 && bl != 0) || (id >= 2 && bl == 0)) { lex_vocab_free(v); return NLM_ERR_VOCAB; }
        v->body[id] = v->blob + p;
        v->blen[id] = (uint8_t)bl;
        p += (size_t)bl;
        if (id < 2) continue;
        uint32_t h = hash_bytes(v->body[id], bl) & v->mask;
        while (v->slots[h] >= 0) {
            int32_t o = v->slots[h];
            if (v->blen[o] == bl && memcmp(v->body[o], v->body[id], (size_t)bl) == 0) { lex_vocab_free(v); return NLM_ERR_VOCAB; }
            h = (h + 1) & v->mask;
        }
        v->slots[h] = id;
    }
    if (p != len) { lex_vocab_free(v); return NLM_ERR_VOCAB; }
    return NLM_OK;
}

void lex_vocab_free(LexVocab* v) {
    free(v->blob); free(v->body); free(v->blen); free(v->slots);
    memset(v, 0, sizeof *v);
}

int32_t lex_vocab_find(const LexVocab* v, const uint8_t* body, int n) {
    uint32_t h = hash_bytes(body, n) & v->mask;
    for (;;) {
        int32_t id = v->slots[h];
        if (id < 0) return 0;
        if (v->blen[id] == n && memcmp(v->body[id], body, (size_t)n) == 0) return id;
        h = (h + 1) & v->mask;
    }
}
