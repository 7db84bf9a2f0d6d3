/* Extended-precision ("long double") helpers for tern.
 *
 * Redis computes INCRBYFLOAT / HINCRBYFLOAT in C long double and prints the result with a
 * fixed 17-digit format, so matching it byte for byte needs the platform's long double.
 * Rust has no such type: values cross the FFI boundary as an opaque 16-byte blob and every
 * operation on them happens here. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

_Static_assert(sizeof(long double) <= 16, "long double must fit tern's 16-byte slot");

/* Longest accepted input, including room for the terminator. */
#define TERN_LD_MAX_CHARS (5 * 1024)

/* Parse `len` bytes as a long double. Accepts exactly what Redis accepts: the whole input
 * must be consumed, no leading whitespace, no NaN, no overflow to +-HUGE_VAL, no underflow
 * to zero. Returns 1 and stores the value on success, 0 otherwise. */
int tern_ld_parse(const char *s, size_t len, long double *out) {
    char tmp[TERN_LD_MAX_CHARS];
    char *end = NULL;
    long double v;

    if (len == 0 || len >= sizeof(tmp)) return 0;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    if (isspace((unsigned char)tmp[0])) return 0;

    errno = 0;
    v = strtold(tmp, &end);
    if (end == NULL || *end != '\0' || (size_t)(end - tmp) != len) return 0;
    if (errno == EINVAL) return 0;
    if (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO))
        return 0;
    if (isnan(v)) return 0;
    *out = v;
    return 1;
}

void tern_ld_from_i64(long long n, long double *out) { *out = (long double)n; }

void tern_ld_from_f64(double d, long double *out) { *out = (long double)d; }

double tern_ld_to_f64(const long double *v) { return (double)*v; }

/* out = a + b. Returns 1 when the sum is finite, 0 for NaN or an infinity. */
int tern_ld_add(const long double *a, const long double *b, long double *out) {
    long double r = *a + *b;
    *out = r;
    return !(isnan(r) || isinf(r));
}

/* Format `v` into `buf` (capacity `cap`) and return the length, or -1 when it does not fit.
 * human != 0: fixed notation with 17 decimals, trailing zeros (and a bare '.') removed,
 * "-0" printed as "0". human == 0: "%.17Lg". Infinities print as inf / -inf, NaN as nan. */
long tern_ld_format(const long double *v, int human, char *buf, size_t cap) {
    long double x = *v;
    int n;

    if (isinf(x)) {
        const char *t = x > 0 ? "inf" : "-inf";
        size_t tl = strlen(t);
        if (cap < tl + 1) return -1;
        memcpy(buf, t, tl + 1);
        return (long)tl;
    }
    if (isnan(x)) {
        if (cap < 4) return -1;
        memcpy(buf, "nan", 4);
        return 3;
    }
    n = snprintf(buf, cap, human ? "%.17Lf" : "%.17Lg", x);
    if (n < 0 || (size_t)n + 1 > cap) return -1;
    if (human) {
        if (memchr(buf, '.', (size_t)n) != NULL) {
            while (n > 0 && buf[n - 1] == '0') n--;
            if (n > 0 && buf[n - 1] == '.') n--;
        }
        if (n == 2 && buf[0] == '-' && buf[1] == '0') {
            buf[0] = '0';
            n = 1;
        }
        buf[n] = '\0';
    }
    return n;
}
