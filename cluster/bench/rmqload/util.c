/* Errors, allocation, clocks, PRNG, durations, CRC-32 and the latency histogram. */
#include "rmqload.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rmqload: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}
void *xcalloc(size_t n, size_t s) {
    void *p = calloc(n ? n : 1, s ? s : 1);
    if (!p) die("out of memory");
    return p;
}
void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


uint64_t rng_s = 0x9E3779B97F4A7C15ull;
uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* "10s", "500ms", "2m", "1.5" (seconds), "250us" -> ns */
uint64_t parse_dur(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) die("bad duration '%s'", s);
    double mul = 1e9;
    if (!*end || !strcmp(end, "s")) mul = 1e9;
    else if (!strcmp(end, "ms")) mul = 1e6;
    else if (!strcmp(end, "us")) mul = 1e3;
    else if (!strcmp(end, "m")) mul = 60e9;
    else die("bad duration unit in '%s' (use s, ms, us, m)", s);
    return (uint64_t)(v * mul + 0.5);
}

long parse_long(const char *s, const char *what) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) die("bad number for %s: '%s'", what, s);
    return v;
}

/* only %d (at most maxd of them) and %% allowed in user patterns */
void check_pattern(const char *p, int maxd, const char *what) {
    int nd = 0;
    for (; *p; p++) {
        if (*p != '%') continue;
        p++;
        if (*p == '%') continue;
        if (*p == 'd') { nd++; continue; }
        die("%s pattern: only %%d is allowed", what);
    }
    if (nd > maxd) die("%s pattern: at most %d %%d", what, maxd);
}

/* ------------------------------------------------------------------ CRC32 (zlib polynomial) */

static uint32_t crc_tab[8][256];
void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++) crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xFF];
}
/* standard CRC-32 (java.util.zip.CRC32), slicing-by-8 */
uint32_t crc32_buf(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n && ((uintptr_t)p & 7)) { crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8); n--; }
    while (n >= 8) {
        uint32_t a, b;
        memcpy(&a, p, 4); memcpy(&b, p + 4, 4); /* little-endian host assumed (x86_64) */
        a ^= crc;
        crc = crc_tab[7][a & 0xFF] ^ crc_tab[6][(a >> 8) & 0xFF] ^ crc_tab[5][(a >> 16) & 0xFF] ^ crc_tab[4][a >> 24] ^
              crc_tab[3][b & 0xFF] ^ crc_tab[2][(b >> 8) & 0xFF] ^ crc_tab[1][(b >> 16) & 0xFF] ^ crc_tab[0][b >> 24];
        p += 8; n -= 8;
    }
    while (n--) crc = crc_tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
/* crc32(A||B) from crc32(A), crc32(B), len(B)  (zlib's crc32_combine, GF(2) matrix method) */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) { if (vec & 1) sum ^= *mat; vec >>= 1; mat++; }
    return sum;
}
static void gf2_square(uint32_t *sq, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) sq[n] = gf2_times(mat, mat[n]);
}
uint32_t crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2) {
    uint32_t even[32], odd[32], row = 1;
    if (len2 == 0) return crc1;
    odd[0] = 0xEDB88320u;
    for (int n = 1; n < 32; n++) { odd[n] = row; row <<= 1; }
    gf2_square(even, odd);
    gf2_square(odd, even);
    do {
        gf2_square(even, odd);
        if (len2 & 1) crc1 = gf2_times(even, crc1);
        len2 >>= 1;
        if (!len2) break;
        gf2_square(odd, even);
        if (len2 & 1) crc1 = gf2_times(odd, crc1);
        len2 >>= 1;
    } while (len2);
    return crc1 ^ crc2;
}

/* ------------------------------------------------------------------ latency histogram (HDR-like) */
double hval_mid(int i) { /* midpoint of bucket i, ns */
    if (i < 128) return i;
    int shift = i / 64 - 1;
    uint64_t sub = (uint64_t)(i % 64) + 64;
    uint64_t lo = sub << shift, hi = ((sub + 1) << shift) - 1;
    return (lo + hi) / 2.0;
}
double hist_q(const hist_t *h, double q) { /* ns */
    if (!h->n) return 0;
    uint64_t want = (uint64_t)(q * (double)h->n + 0.999999);
    if (want < 1) want = 1;
    if (want > h->n) want = h->n;
    uint64_t acc = 0;
    for (int i = 0; i < HB; i++) {
        acc += h->b[i];
        if (acc >= want) {
            double v = hval_mid(i);
            return v > (double)h->max ? (double)h->max : v;
        }
    }
    return (double)h->max;
}

void codes_add(codes_t *c, int32_t code) {
    for (int i = 0; i < c->n; i++)
        if (c->code[i] == code) { c->cnt[i]++; return; }
    if (c->n < 32) { c->code[c->n] = code; c->cnt[c->n++] = 1; } else c->other++;
}

