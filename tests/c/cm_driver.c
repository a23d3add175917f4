/* tests/c/cm_driver.c: round trip of files through the byte models alone (bytemodel/cm.c), for tests and
 * for tuning on dev: prints, per file and model, FILE@mN (N: CM_MODEL_1, CM_MODEL_2), its size, the payload
 * size, bits per byte, CPU seconds of the encode and the decode and the payload's FNV-1a hash, and fails
 * (exit 1) when the decode differs.
 * Usage: cm_driver [-e] [-m N] FILE...  (each file is one run of the size class that covers it; -e: encode
 * only; -m N: model N only, else both) */
#include "common/fpenv.h"
#include "bytemodel/cm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu(void) { return (double)clock() / CLOCKS_PER_SEC; }

static uint64_t fnv1a(const uint8_t* p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

int main(int argc, char** argv) {
    int bad = 0;
    double tot_in = 0, tot_out = 0;
    int a0 = 1, enc_only = 0, only = 0;
    if (a0 < argc && strcmp(argv[a0], "-e") == 0) enc_only = 1, a0++;
    if (a0 + 1 < argc && strcmp(argv[a0], "-m") == 0) only = atoi(argv[a0 + 1]), a0 += 2;
    for (int a = a0; a < argc; a++)
    for (int model = CM_MODEL_1; model <= CM_MODEL_2; model++) {
        if (only && model != only) continue;
        char name[4096];
        snprintf(name, sizeof name, "%s@m%d", argv[a], model);
        FILE* f = fopen(argv[a], "rb");
        if (!f) { perror(argv[a]); return 2; }
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        uint8_t* src = malloc((size_t)n + 1);
        if (fread(src, 1, (size_t)n, f) != (size_t)n) { perror("read"); return 2; }
        fclose(f);
        int s = cm_size_class((uint64_t)n);
        if (s < 0) { fprintf(stderr, "%s: over %d bytes\n", argv[a], 1 << CM_SIZE_MAX); return 2; }
        int err = 0;
        CmModel* m = cm_new(s, model, &err);
        if (!m) { fprintf(stderr, "cm_new: %d\n", err); return 2; }
        Rc rc;
        memset(&rc, 0, sizeof rc);
        rc_enc_init(&rc.enc);
        double t0 = cpu();
        err = cm_code(m, &rc, src, (size_t)n);
        if (!err) err = rc_enc_finish(&rc.enc);
        double t1 = cpu();
        if (err) { fprintf(stderr, "encode: %d\n", err); return 2; }
        size_t plen = rc.enc.len;
        cm_free(m);
        if (enc_only) {
            printf("%-28s %9ld %9zu %6.3f bpb  enc %6.2fs fnv %016llx\n", name, n, plen, 8.0 * plen / (n ? n : 1),
                   t1 - t0, (unsigned long long)fnv1a(rc.enc.buf, plen));
            tot_in += n;
            tot_out += plen;
            rc_enc_free(&rc.enc);
            free(src);
            continue;
        }
        m = cm_new(s, model, &err);
        uint8_t* dst = malloc((size_t)n + 1);
        Rc rd;
        memset(&rd, 0, sizeof rd);
        rd.decoding = 1;
        rc_dec_init(&rd.dec, rc.enc.buf, plen);
        double t2 = cpu();
        err = cm_code(m, &rd, dst, (size_t)n);
        if (!err) err = rc_dec_finish(&rd.dec);
        double t3 = cpu();
        int ok = !err && memcmp(src, dst, (size_t)n) == 0;
        bad |= !ok;
        printf("%-28s %9ld %9zu %6.3f bpb  enc %6.2fs dec %6.2fs fnv %016llx %s\n", name, n, plen,
               8.0 * plen / (n ? n : 1), t1 - t0, t3 - t2, (unsigned long long)fnv1a(rc.enc.buf, plen),
               ok ? "ok" : "MISMATCH");
        tot_in += n;
        tot_out += plen;
        cm_free(m);
        rc_enc_free(&rc.enc);
        free(src);
        free(dst);
    }
    if (only && argc - a0 > 1) printf("%-28s %9.0f %9.0f %6.3f bpb\n", "total", tot_in, tot_out, 8.0 * tot_out / tot_in);
    return bad;
}
