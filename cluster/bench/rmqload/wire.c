/* Frames: header parsing and decoding (both serialize types), request encoding. */
#include "rmqload.h"

#include <string.h>

/* ------------------------------------------------------------------ header decoding */
static inline size_t skip_ws(const uint8_t *p, size_t n, size_t i) {
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    return i;
}
static int skip_string(const uint8_t *p, size_t n, size_t *pi) { /* at '"' */
    size_t i = *pi + 1;
    while (i < n) {
        if (p[i] == '\\') { i += 2; continue; }
        if (p[i] == '"') { *pi = i + 1; return 0; }
        i++;
    }
    return -1;
}
static int skip_value(const uint8_t *p, size_t n, size_t *pi) {
    size_t i = *pi;
    if (i >= n) return -1;
    if (p[i] == '"') return skip_string(p, n, pi);
    if (p[i] == '{' || p[i] == '[') {
        int depth = 0;
        while (i < n) {
            uint8_t ch = p[i];
            if (ch == '"') { if (skip_string(p, n, &i)) return -1; continue; }
            if (ch == '{' || ch == '[') depth++;
            else if (ch == '}' || ch == ']') { if (--depth == 0) { *pi = i + 1; return 0; } }
            i++;
        }
        return -1;
    }
    size_t s = i;
    while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') i++;
    if (i == s) return -1;
    *pi = i;
    return 0;
}
static int parse_int_at(const uint8_t *p, size_t n, size_t *pi, int64_t *out) {
    size_t i = *pi;
    int neg = 0, quoted = 0;
    if (i < n && p[i] == '"') { quoted = 1; i++; }
    if (i < n && p[i] == '-') { neg = 1; i++; }
    if (i >= n || p[i] < '0' || p[i] > '9') return -1;
    int64_t v = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        v = v * 10 + (p[i] - '0');
        if (v > 0xFFFFFFFFll) return -1;
        i++;
    }
    if (quoted) { if (i >= n || p[i] != '"') return -1; i++; }
    *out = neg ? -v : v;
    *pi = i;
    return 0;
}
/* Top-level JSON object: extract integers "code", "opaque", "flag". 0 = ok (all three found). */
int parse_hdr_json(const uint8_t *p, size_t n, int32_t *code, int32_t *opaque, int32_t *flag) {
    size_t i = skip_ws(p, n, 0);
    int have = 0;
    if (i >= n || p[i] != '{') return -1;
    i = skip_ws(p, n, i + 1);
    if (i < n && p[i] == '}') return -1;
    for (;;) {
        i = skip_ws(p, n, i);
        if (i >= n || p[i] != '"') return -1;
        size_t ks = i + 1;
        if (skip_string(p, n, &i)) return -1;
        size_t kl = i - 1 - ks;
        i = skip_ws(p, n, i);
        if (i >= n || p[i] != ':') return -1;
        i = skip_ws(p, n, i + 1);
        int which = 0;
        if (kl == 4 && !memcmp(p + ks, "code", 4)) which = 1;
        else if (kl == 6 && !memcmp(p + ks, "opaque", 6)) which = 2;
        else if (kl == 4 && !memcmp(p + ks, "flag", 4)) which = 4;
        if (which) {
            int64_t v;
            if (parse_int_at(p, n, &i, &v)) return -1;
            if (which == 1) *code = (int32_t)v;
            else if (which == 2) *opaque = (int32_t)v;
            else *flag = (int32_t)v;
            have |= which;
        } else if (skip_value(p, n, &i)) return -1;
        i = skip_ws(p, n, i);
        if (i >= n) return -1;
        if (p[i] == ',') { i++; continue; }
        if (p[i] == '}') break;
        return -1;
    }
    return have == 7 ? 0 : -1;
}
/* ROCKETMQ binary header: code i16, lang u8, version i16, opaque i32, flag i32, ... */
static int parse_hdr_bin(const uint8_t *h, size_t n, int32_t *code, int32_t *opaque, int32_t *flag) {
    if (n < 21) return -1;
    *code = (int16_t)((h[0] << 8) | h[1]);
    *opaque = (int32_t)get_be32(h + 5);
    *flag = (int32_t)get_be32(h + 9);
    return 0;
}

/* p points at the 4-byte length; avail bytes available. returns: 1 frame ok, 0 need more, -1 protocol
 * error (unrecoverable), -2 header parse error (frame consumed) */
int decode_frame(const uint8_t *p, size_t avail, frame_t *f, size_t *consumed) {
    if (avail < 4) return 0;
    uint32_t total = get_be32(p);
    if (total < 4 || total > MAX_FRAME - 4) return -1;
    if (avail < 4 + (size_t)total) return 0;
    uint32_t hw = get_be32(p + 4);
    f->ser = (int)(hw >> 24);
    f->hlen = hw & 0xFFFFFF;
    if (f->hlen > total - 4) return -1;
    f->total = total;
    f->blen = total - 4 - f->hlen;
    f->hdr = p + 8;
    f->body = p + 8 + f->hlen;
    *consumed = 4 + (size_t)total;
    int r;
    if (f->ser == 0) r = parse_hdr_json(f->hdr, f->hlen, &f->code, &f->opaque, &f->flag);
    else if (f->ser == 1) r = parse_hdr_bin(f->hdr, f->hlen, &f->code, &f->opaque, &f->flag);
    else r = -1;
    return r ? -2 : 1;
}

char *json_escape_dup(const char *s, int *outlen) {
    size_t n = strlen(s);
    char *o = xmalloc(n * 6 + 1), *q = o;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { *q++ = '\\'; *q++ = (char)*p; }
        else if (*p < 0x20) q += sprintf(q, "\\u%04X", *p);
        else *q++ = (char)*p;
    }
    *q = 0;
    *outlen = (int)(q - o);
    return o;
}

/* ------------------------------------------------------------------ requests */

/* A read request's header around its one argument and its opaque, fastjson's field order:
 * {"code":C[,"extFields":{"KEY":"ARG"}],"flag":0,"language":"JAVA","opaque":N,
 *  "serializeTypeCurrentRPC":"JSON","version":V}                                          */
static char R_P1[96], R_P2[64], R_P3[96];
static size_t R_P1len, R_P2len, R_P3len;
static int R_arg;

int request_takes_arg(void) { return R_arg; }

void request_hdr_init(int code, int version) {
    const char *key = code == CODE_ROUTE ? "topic" : code == CODE_CLUSTER_TOPICS ? "cluster" : NULL;
    R_arg = key != NULL;
    if (key) {
        R_P1len = (size_t)snprintf(R_P1, sizeof R_P1, "{\"code\":%d,\"extFields\":{\"%s\":\"", code, key);
        R_P2len = (size_t)snprintf(R_P2, sizeof R_P2, "\"},\"flag\":0,\"language\":\"JAVA\",\"opaque\":");
    } else {
        R_P1len = (size_t)snprintf(R_P1, sizeof R_P1, "{\"code\":%d,\"flag\":0,\"language\":\"JAVA\",\"opaque\":", code);
        R_P2len = 0;
    }
    R_P3len = (size_t)snprintf(R_P3, sizeof R_P3, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":%d}", version);
}

static inline int fmt_int(char *out, int32_t v) {
    char tmp[16];
    int n = 0, neg = v < 0;
    uint32_t u = neg ? (uint32_t)(-(int64_t)v) : (uint32_t)v;
    do { tmp[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    int k = 0;
    if (neg) out[k++] = '-';
    while (n) out[k++] = tmp[--n];
    return k;
}

/* encode one request frame into out (room for 256 + argument length); returns its length */
size_t enc_request(uint8_t *out, const str_t *arg, int32_t opaque) {
    uint8_t *h = out + 8, *q = h;
    memcpy(q, R_P1, R_P1len); q += R_P1len;
    if (R_arg) {
        memcpy(q, arg->s, (size_t)arg->len); q += arg->len;
        memcpy(q, R_P2, R_P2len); q += R_P2len;
    }
    q += fmt_int((char *)q, opaque);
    memcpy(q, R_P3, R_P3len); q += R_P3len;
    uint32_t hl = (uint32_t)(q - h);
    put_be32(out, 4 + hl);
    put_be32(out + 4, hl); /* serialize type 0 = JSON */
    return 8 + hl;
}
