/* tests/c/test_speller.c: harness for csrc/speller (spelling cache, speller, literal gaps).
 *
 * Usage: test_speller PRIME_FILE NOVEL_FILE STREAM_FILE [quick]
 *   PRIME_FILE  words separated by '\n' (the speller priming list)
 *   NOVEL_FILE  distinct words absent from the priming list: bits/char of the primed speller
 *   STREAM_FILE unknown-word tokens in text order (with repeats): the cache's effect
 * Built by tests/test_speller.py.  Prints "ok ..." / "stat ..." / "hash ..." lines; exits non-zero on
 * failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "speller/speller.h"

#define RND_SEED 0x1234567887654321ull
#include "check.h" /* CHECK, rnd */

static uint8_t* read_file(const char* path, size_t* n) {
    FILE* f = fopen(path, "rb");
    CHECK(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t* b = (uint8_t*)malloc((size_t)sz + 1);
    CHECK(fread(b, 1, (size_t)sz, f) == (size_t)sz, "read");
    fclose(f);
    *n = (size_t)sz;
    return b;
}

typedef struct {
    int gap;     /* 1: literal whitespace run, 0: unknown body, 2: known word (speller_see_body) */
    int len;
    uint8_t* b;  /* body or run */
    int maxlen;
} Item;

/* words of a '\n'-separated list (cut to 32 bytes) */
static int split_words(uint8_t* b, size_t n, uint8_t** w, int* wl, int cap) {
    int k = 0;
    size_t i = 0;
    while (i < n && k < cap) {
        size_t j = i;
        while (j < n && b[j] != '\n') j++;
        if (j > i) {
            w[k] = b + i;
            wl[k] = (int)(j - i > 32 ? 32 : j - i);
            k++;
        }
        i = j + 1;
    }
    return k;
}

static int code_items(Speller* s, Rc* rc, Item* it, int n, uint8_t* scratch, double* bits, int* hits) {
    for (int k = 0; k < n; k++) {
        int err, len = it[k].len, hit = 0;
        uint8_t* b = rc->decoding ? scratch : it[k].b;
        if (it[k].gap == 2) { /* a known word: both sides only show it to the speller */
            speller_see_body(s, it[k].b, it[k].len);
            continue;
        }
        if (it[k].gap) err = speller_code_gap(s, rc, b, &len, it[k].maxlen, bits ? bits + 2 : NULL);
        else err = speller_code_unknown(s, rc, b, &len, it[k].maxlen, &hit, bits);
        if (err) return err;
        if (hits) *hits += hit;
        if (rc->decoding && (len != it[k].len || memcmp(b, it[k].b, (size_t)len))) return -100 - k;
    }
    return 0;
}

static int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

static Speller* new_kind(const uint8_t* prime, size_t plen, int kind) {
    Speller* s = speller_new(prime, plen);
    CHECK(s && speller_set_kind(s, kind) == 0, "new speller of kind %d", kind);
    return s;
}

/* kind SPELLER_PPM or SPELLER_CM (whose bodies, like the lexer's, never hold whitespace) */
static void test_roundtrip(const uint8_t* prime, size_t plen, uint8_t** words, int* wl, int nw, int kind) {
    enum { N = 3000 };
    static Item it[N];
    static uint8_t store[N][70000 > 33 ? 33 : 33];
    uint8_t* gapstore = (uint8_t*)malloc(70000 * 8);
    int ngap = 0;
    static const uint8_t WS[6] = {' ', '\t', '\n', '\r', '\v', '\f'};
    for (int k = 0; k < N; k++) {
        uint64_t r = rnd() % 100;
        it[k].gap = 0;
        it[k].maxlen = 32;
        it[k].b = store[k];
        if (r < 10 && ngap < 8) {
            /* literal gap, sometimes very long */
            it[k].gap = 1;
            it[k].maxlen = 65535;
            int len = (rnd() % 4 == 0) ? 1 + (int)(rnd() % 65535) : 1 + (int)(rnd() % 12);
            if (rnd() % 50 == 0) len = 65535;
            it[k].b = gapstore + (size_t)ngap * 70000;
            for (int i = 0; i < len; i++) it[k].b[i] = WS[(rnd() % 3 == 0) ? rnd() % 6 : (i & 1) * 2];
            it[k].len = len;
            if (len > 100) ngap++;
        } else if (r < 30) {
            /* binary body, any bytes, up to maxlen; sometimes a smaller maxlen reached exactly */
            int maxlen = (rnd() % 4 == 0) ? 1 + (int)(rnd() % 32) : 32;
            int len = 1 + (int)(rnd() % maxlen);
            if (rnd() % 3 == 0) len = maxlen;
            for (int i = 0; i < len; i++) {
                it[k].b[i] = (uint8_t)rnd();
                if (kind == SPELLER_CM && is_ws(it[k].b[i])) it[k].b[i] = 'x';
            }
            it[k].len = len;
            it[k].maxlen = maxlen;
        } else if (r < 60 && k > 0) {
            /* repeat of an earlier body */
            int j = (int)(rnd() % k);
            while (j > 0 && it[j].gap) j--;
            if (it[j].gap) j = 0;
            if (!it[j].gap) {
                memcpy(it[k].b, it[j].b, (size_t)it[j].len);
                it[k].len = it[j].len;
                it[k].maxlen = 32;
            } else {
                it[k].b[0] = 'x';
                it[k].len = 1;
            }
        } else {
            /* word from the list, or a long word of 32 letters */
            if (rnd() % 10 == 0) {
                for (int i = 0; i < 32; i++) it[k].b[i] = (uint8_t)('a' + rnd() % 26);
                it[k].len = 32;
            } else {
                int j = (int)(rnd() % nw);
                memcpy(it[k].b, words[j], (size_t)wl[j]);
                it[k].len = wl[j];
                if (rnd() % 2) it[k].gap = 2; /* shown as a known word */
            }
        }
    }
    uint8_t scratch[65536];
    /* encoder: with a save / throwaway attempt / restore in the middle (the decoder never sees it) */
    Speller* se = new_kind(prime, plen, kind);
    Rc rc;
    memset(&rc, 0, sizeof rc);
    rc_enc_init(&rc.enc);
    double bits[3] = {0, 0, 0};
    int hits = 0;
    CHECK(code_items(se, &rc, it, N / 2, NULL, bits, &hits) == 0, "enc 1");
    CHECK(speller_save(se) == 0, "save");
    Rc junk;
    memset(&junk, 0, sizeof junk);
    rc_enc_init(&junk.enc);
    CHECK(code_items(se, &junk, it + N / 2, N / 4, NULL, NULL, NULL) == 0, "junk");
    CHECK(speller_restore(se) == 0, "restore");
    rc_enc_free(&junk.enc);
    CHECK(code_items(se, &rc, it + N / 2, N - N / 2, NULL, bits, &hits) == 0, "enc 2");
    CHECK(rc_enc_finish(&rc.enc) == 0, "finish");
    double total = bits[0] + bits[1] + bits[2];
    CHECK(rc.enc.len <= total / 8 * 1.0001 + 16, "len %zu vs %.1f", rc.enc.len, total / 8);
    /* decoder: fresh speller */
    Speller* sd = new_kind(prime, plen, kind);
    Rc rd;
    memset(&rd, 0, sizeof rd);
    rd.decoding = 1;
    rc_dec_init(&rd.dec, rc.enc.buf, rc.enc.len);
    int err = code_items(sd, &rd, it, N, scratch, NULL, NULL);
    CHECK(err == 0, "decode err %d", err);
    CHECK(rc_dec_finish(&rd.dec) == 0, "dec finish");
    printf("ok roundtrip kind %d items %d bytes %zu hits %d cache_bodies %d tables %zu\n", kind, N, rc.enc.len,
           hits, speller_cache_size(se), speller_table_bytes(se));
    /* reset gives the just-primed state: the same stream encodes to the same bytes as a fresh speller */
    speller_reset(se);
    CHECK(speller_cache_size(se) == 0, "reset empties cache");
    Rc r2;
    memset(&r2, 0, sizeof r2);
    rc_enc_init(&r2.enc);
    CHECK(code_items(se, &r2, it, N, NULL, NULL, NULL) == 0, "enc after reset");
    CHECK(rc_enc_finish(&r2.enc) == 0, "fin");
    Speller* sf = new_kind(prime, plen, kind);
    Rc r3;
    memset(&r3, 0, sizeof r3);
    rc_enc_init(&r3.enc);
    CHECK(code_items(sf, &r3, it, N, NULL, NULL, NULL) == 0, "enc fresh");
    CHECK(rc_enc_finish(&r3.enc) == 0, "fin");
    CHECK(r2.enc.len == r3.enc.len && !memcmp(r2.enc.buf, r3.enc.buf, r2.enc.len), "reset != fresh");
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < rc.enc.len; i++) h = (h ^ rc.enc.buf[i]) * 0x100000001B3ull;
    printf("hash speller_roundtrip kind %d %016llx\n", kind, (unsigned long long)h);
    /* corrupt payloads never crash and are (almost always) detected */
    int detected = 0;
    for (int t = 0; t < 12; t++) {
        uint8_t* cb = (uint8_t*)malloc(rc.enc.len);
        memcpy(cb, rc.enc.buf, rc.enc.len);
        cb[rnd() % rc.enc.len] ^= (uint8_t)(1 + rnd() % 255);
        speller_reset(sd);
        rc_dec_init(&rd.dec, cb, rc.enc.len);
        int e = code_items(sd, &rd, it, N, scratch, NULL, NULL);
        if (e || rc_dec_finish(&rd.dec)) detected++;
        free(cb);
    }
    CHECK(detected == 12, "corruption detected %d/12", detected);
    printf("ok corrupt detected %d/12\n", detected);
    /* bad encoder input is refused */
    int len = 0, hit;
    uint8_t b[40] = "abc";
    rc.decoding = 0;
    CHECK(speller_code_unknown(se, &rc, b, &len, 32, &hit, NULL) < 0, "empty body refused");
    len = 33;
    CHECK(speller_code_unknown(se, &rc, b, &len, 32, &hit, NULL) < 0, "long body refused");
    len = 2;
    CHECK(speller_code_gap(se, &rc, b, &len, 100, NULL) < 0, "non-space gap refused");
    if (kind == SPELLER_CM) {
        uint8_t sp[4] = "a b";
        len = 3;
        CHECK(speller_code_unknown(se, &rc, sp, &len, 32, &hit, NULL) < 0, "a body with whitespace refused");
        /* decoded by a speller in another state, a valid payload never yields whitespace in a body */
        Speller* sx = new_kind(prime, plen, kind);
        Speller* sy = new_kind(prime, plen, kind);
        speller_see_body(sy, (const uint8_t*)"zzz", 3);
        int bad = 0;
        for (int t = 0; t < 200; t++) {
            Rc rx;
            memset(&rx, 0, sizeof rx);
            rc_enc_init(&rx.enc);
            uint8_t one[8];
            int n1 = 1 + (int)(rnd() % 6);
            for (int i = 0; i < n1; i++) one[i] = (uint8_t)('a' + rnd() % 26);
            len = n1;
            CHECK(speller_code_unknown(sx, &rx, one, &len, 32, &hit, NULL) == 0, "code");
            CHECK(rc_enc_finish(&rx.enc) == 0, "fin");
            Rc ry;
            memset(&ry, 0, sizeof ry);
            ry.decoding = 1;
            rc_dec_init(&ry.dec, rx.enc.buf, rx.enc.len);
            uint8_t out[40];
            len = 0;
            int r = speller_code_unknown(sy, &ry, out, &len, 32, &hit, NULL);
            for (int i = 0; r == 0 && i < len; i++) bad += is_ws(out[i]);
            rc_enc_free(&rx.enc);
        }
        CHECK(bad == 0, "decoded whitespace in a body");
        speller_free(sx);
        speller_free(sy);
    }
    rc_enc_free(&rc.enc);
    rc_enc_free(&r2.enc);
    rc_enc_free(&r3.enc);
    speller_free(se);
    speller_free(sd);
    speller_free(sf);
    free(gapstore);
}

/* bits/char of the primed speller on novel words (each coded once: every one is a cache escape) */
static void test_bits(const uint8_t* prime, size_t plen, uint8_t** w, int* wl, int nw, const char* label) {
    Speller* s = speller_new(prime, plen);
    Rc rc;
    memset(&rc, 0, sizeof rc);
    rc_enc_init(&rc.enc);
    double bits[2] = {0, 0};
    long chars = 0;
    int coded = 0;
    for (int k = 0; k < nw; k++) {
        int len = wl[k], hit = 0;
        double b2[2] = {0, 0};
        CHECK(speller_code_unknown(s, &rc, w[k], &len, 32, &hit, b2) == 0, "code");
        if (hit) continue; /* duplicate in the list */
        bits[0] += b2[0];
        bits[1] += b2[1];
        chars += wl[k];
        coded++;
    }
    rc_enc_finish(&rc.enc);
    printf("stat %s words %d chars %ld spell_bits_per_char %.3f spell_bits_per_symbol_incl_end %.3f "
           "bits_per_word %.2f cache_escape_bits_per_word %.2f tables %zu\n",
           label, coded, chars, bits[1] / chars, bits[1] / (chars + coded), bits[1] / coded, bits[0] / coded,
           speller_table_bytes(s));
    rc_enc_free(&rc.enc);
    speller_free(s);
}

/* the cache on a token stream with repeats */
static void test_cache(const uint8_t* prime, size_t plen, uint8_t** w, int* wl, int nw) {
    Speller* s = speller_new(prime, plen);
    Rc rc;
    memset(&rc, 0, sizeof rc);
    rc_enc_init(&rc.enc);
    double hit_bits = 0, miss_bits = 0, miss_spell = 0;
    int hits = 0, misses = 0;
    for (int k = 0; k < nw; k++) {
        int len = wl[k], hit = 0;
        double b2[2] = {0, 0};
        CHECK(speller_code_unknown(s, &rc, w[k], &len, 32, &hit, b2) == 0, "code");
        if (hit) hits++, hit_bits += b2[0];
        else misses++, miss_bits += b2[0] + b2[1], miss_spell += b2[1];
    }
    rc_enc_finish(&rc.enc);
    double with_cache = hit_bits + miss_bits;
    /* without a cache every repeat would be spelled again: at least about the cost of a spelled word */
    double spell_every = miss_spell / misses * (hits + misses);
    printf("stat cache tokens %d hits %d bits_per_hit %.2f bits_per_new %.2f bits_per_token %.2f "
           "approx_spell_every_token %.2f bytes %zu\n",
           nw, hits, hit_bits / (hits ? hits : 1), miss_bits / misses, with_cache / nw, spell_every / nw,
           rc.enc.len);
    CHECK(hits == 0 || hit_bits / hits < 0.5 * miss_spell / misses, "cache does not help");
    /* decode it back */
    Speller* sd = speller_new(prime, plen);
    Rc rd;
    memset(&rd, 0, sizeof rd);
    rd.decoding = 1;
    rc_dec_init(&rd.dec, rc.enc.buf, rc.enc.len);
    for (int k = 0; k < nw; k++) {
        uint8_t b[32];
        int len = 0, hit;
        CHECK(speller_code_unknown(sd, &rd, b, &len, 32, &hit, NULL) == 0 && len == wl[k] &&
                  !memcmp(b, w[k], (size_t)len),
              "cache decode %d", k);
    }
    CHECK(rc_dec_finish(&rd.dec) == 0, "finish");
    printf("ok cache\n");
    rc_enc_free(&rc.enc);
    speller_free(s);
    speller_free(sd);
}

int main(int argc, char** argv) {
    CHECK(argc >= 4, "usage: test_speller PRIME NOVEL STREAM");
    size_t plen, nlen, slen;
    uint8_t* prime = read_file(argv[1], &plen);
    uint8_t* novel = read_file(argv[2], &nlen);
    uint8_t* stream = read_file(argv[3], &slen);
    enum { CAP = 400000 };
    uint8_t** w = (uint8_t**)malloc(sizeof(uint8_t*) * CAP);
    int* wl = (int*)malloc(sizeof(int) * CAP);
    int nw = split_words(novel, nlen, w, wl, CAP);
    CHECK(nw > 0, "no novel words");
    test_roundtrip(prime, plen, w, wl, nw, SPELLER_PPM);
    test_roundtrip(prime, plen, w, wl, nw, SPELLER_CM);
    if (argc > 4 && !strcmp(argv[4], "quick")) { /* second build: the byte-exact round trip only */
        printf("ALL OK\n");
        return 0;
    }
    test_bits(prime, plen, w, wl, nw, "novel_primed");
    test_bits(NULL, 0, w, wl, nw, "novel_unprimed");
    int ns = split_words(stream, slen, w, wl, CAP);
    CHECK(ns > 0, "no stream");
    test_cache(prime, plen, w, wl, ns);
    printf("ALL OK\n");
    return 0;
}
