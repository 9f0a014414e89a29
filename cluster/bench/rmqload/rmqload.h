/*
 * rmqload - load generator for the Apache RocketMQ remoting protocol (NameServer side).
 *
 * Linux (epoll), libc only, one thread.  Build: make  (or cc -O2 -o rmqload *.c)
 *
 *   util.c    errors, allocation, clocks, PRNG, durations, CRC-32, latency histogram
 *   wire.c    frames: header parsing, decoding, request encoding
 *   layout.c  the simulated brokers: names, topics, registration bodies and frames
 *   load.c    connections and the event loop (route side, broker side, hold)
 *   report.c  the JSON result, /proc sampling
 *   main.c    options, usage, the validation commands
 *
 * Wire format: [int32 total][int32 (serType<<24)|headerLen][header JSON][body], big-endian,
 * total = 4 + headerLen + bodyLen.  Requests use a JSON header laid out exactly like the Java
 * client/broker (fastjson, fields alphabetical).
 */
#ifndef RMQLOAD_H
#define RMQLOAD_H
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define MAX_FRAME (16 * 1024 * 1024) /* Netty decoder limit of the Java server */
#define CODE_ROUTE 105
#define CODE_REGISTER 103
#define CODE_ALL_TOPICS 206
#define CODE_CLUSTER_TOPICS 224

/* ------------------------------------------------------------------ util.c */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t s);
void *xrealloc(void *p, size_t n);
int64_t wall_ms(void);
extern uint64_t rng_s;
uint64_t splitmix64(uint64_t x);
uint64_t parse_dur(const char *s);
long parse_long(const char *s, const char *what);
void check_pattern(const char *p, int maxd, const char *what);

void crc_init(void);
uint32_t crc32_buf(uint32_t crc, const uint8_t *p, size_t n);
uint32_t crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
static inline uint32_t rmq_crc(uint32_t c) { return c & 0x7FFFFFFFu; } /* UtilAll.crc32 */

/* values in ns; exact below 128, then 64 sub-buckets per power of two (<1.6% bucket width) */
#define HB (64 * 46)
typedef struct {
    uint64_t b[HB];
    uint64_t n, max;
    double sum;
} hist_t;
double hist_q(const hist_t *h, double q);
double hval_mid(int i);

typedef struct {
    int32_t code[32];
    uint64_t cnt[32];
    int n;
    uint64_t other;
} codes_t;
void codes_add(codes_t *c, int32_t code);

/* hot paths, inlined everywhere */
static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static inline uint32_t get_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t rnd64(void) { /* xorshift64* */
    rng_s ^= rng_s >> 12; rng_s ^= rng_s << 25; rng_s ^= rng_s >> 27;
    return rng_s * 2685821657736338717ull;
}

static inline uint32_t rnd_below(uint32_t n) { return (uint32_t)(((rnd64() >> 32) * (uint64_t)n) >> 32); }

static inline int hidx(uint64_t v) {
    if (v < 128) return (int)v;
    int msb = 63 - __builtin_clzll(v);
    int shift = msb - 6;
    int i = (shift + 1) * 64 + (int)((v >> shift) - 64);
    return i < HB ? i : HB - 1;
}

static inline void hist_add(hist_t *h, uint64_t v) {
    h->b[hidx(v)]++;
    h->n++;
    h->sum += (double)v;
    if (v > h->max) h->max = v;
}

/* ------------------------------------------------------------------ wire.c */
typedef struct {
    int32_t code, opaque, flag;
    uint32_t total, hlen, blen;
    int ser;
    const uint8_t *hdr, *body;
} frame_t;
typedef struct {
    char *s; /* JSON-escaped (what goes on the wire inside quotes) */
    int len;
} str_t;
int parse_hdr_json(const uint8_t *p, size_t n, int32_t *code, int32_t *opaque, int32_t *flag);
int decode_frame(const uint8_t *p, size_t avail, frame_t *f, size_t *consumed);
char *json_escape_dup(const char *s, int *outlen);
void request_hdr_init(int code, int version);
size_t enc_request(uint8_t *out, const str_t *arg, int32_t opaque);
int request_takes_arg(void);

/* ------------------------------------------------------------------ configuration (main.c) */
enum { M_ROUTE = 1, M_REGISTER, M_MIXED };
typedef struct {
    int mode;
    char host[64];
    int port;
    uint64_t dur, warm, drain, setup_timeout, hold;
    int version;
    int server_pid;
    int quiet, verbose;
    const char *label;
    uint64_t seed;
    /* route side */
    int conns, depth, code;
    const char *topic_pattern;
    long topic_count, topic_first;
    const char *topic_file;
    const char *dump_response;
    int check_body;
    /* broker side */
    int clusters, brokers, topics, slaves, width, split, body5;
    int shared;
    const char *reg_pattern;
    int rand_prefix;
    int queues, perm;
    int bump;
    uint64_t interval;
    long sleep_max_ms;
    int reg_conc;
    double reg_rate;
    uint64_t heartbeat;
    int broker_port;
    const char *cluster_fmt, *broker_fmt;
    int no_register;
    /* encode-register / layout */
    long long enc_counter, enc_timestamp;
    long enc_opaque, sample;
} cfg_t;
extern cfg_t cfg;

/* ------------------------------------------------------------------ layout.c */
typedef struct {
    uint8_t *buf; /* topicConfigTable JSON object and the closing of the body (constant part) */
    size_t len;
    uint32_t crc; /* plain CRC32 of buf */
    int ntopics;
} suffix_t;

struct conn;
typedef struct broker {
    int cluster, bidx, id, gidx, name_idx;
    char cname[128], bname[128], addr[64], haddr[64];
    suffix_t **parts; /* one unless split registration */
    int nparts, part;
    long long counter, ts_ms;
    struct conn *c;
    int inflight, registered_once, dead;
    int32_t op;
    uint64_t t_send, t_first, next_due;
    /* pending write: hbuf (frame prefix + header + body prefix) then the part's suffix */
    uint8_t hbuf[1280];
    size_t hlen, woff, flen, blen;
    int writing;
    uint64_t nreg;
} broker_t;

extern broker_t *brokers;
extern int n_brokers;
extern str_t *route_args;
extern long n_route_args;
long layout_names(void);
long layout_distinct_topics(void);
long layout_topic_configs(void);
void layout_topic_name(long idx, char *buf, size_t cap);
void build_route_args(void);
void setup_brokers(void);
void broker_build(broker_t *b, int32_t opaque);
size_t broker_body_bytes(const broker_t *b);
int cmd_layout(void);

/* ------------------------------------------------------------------ load.c */
int run_load(void);

/* ------------------------------------------------------------------ report.c */
typedef struct {
    uint64_t frames, parse_err, proto_err, not_response, opaque_mismatch, empty_body, bad_body, conn_closed, lost;
} val_t;
typedef struct {
    uint64_t sent, resp, rx_bytes, tx_bytes, body_bytes;
    codes_t codes;
    hist_t h;
} sstats_t;
typedef struct { double cpu_s; long hwm_kb, rss_kb, threads; int ok; } procs_t;
typedef struct { /* what the event loop hands the report */
    double win, setup_s;
    int n_rconns;
    const sstats_t *rs, *gs, *ss;
    const val_t *rval, *gval;
    double ccpu, cu, cs, mb0, mb1;
    long maxrss;
    procs_t sp0, sp1, sp2;
} result_t;
typedef struct {
    uint64_t regs_ok, regs_failed, reconnects, connect_failed, conn_lost;
    double seconds;
} hold_t;
procs_t proc_sample(int pid);
double machine_busy_s(void);
double self_cpu(double *u, double *sy, long *maxrss);
uint64_t report_result(FILE *o, const result_t *r);
void report_hold(FILE *o, const hold_t *h);
void json_str(FILE *o, const char *s);

#endif
