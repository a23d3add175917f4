/* contract_probe.c: a dot product and an axpy written as a*b + c, the pattern a contracting compiler fuses
 * into a multiply-add.  tests/test_build.py builds it with contraction allowed (it must then find FMA
 * instructions: the disassembly check can fail) and with csrc/common/fpenv.h force-included (it must find
 * none: the header's pragma alone stops GCC and clang from contracting). */
float probe_dot(const float* a, const float* b, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s = s + a[i] * b[i];
    return s;
}

void probe_axpy(float* y, float a, const float* x, int n) {
    for (int i = 0; i < n; i++) y[i] = y[i] + a * x[i];
}
