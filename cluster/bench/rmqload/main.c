/* Options, usage, and the validation commands (selftest, decode, encode-*, layout). */
#include "rmqload.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

cfg_t cfg;

/* ------------------------------------------------------------------ validation helpers */

static int hexval(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    ch |= 0x20;
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}
static uint8_t *read_hex_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open %s", path);
    size_t cap = 4096, len = 0;
    uint8_t *out = xmalloc(cap);
    int hi = -1, ch;
    while ((ch = fgetc(f)) != EOF) {
        int v = hexval(ch);
        if (v < 0) continue;
        if (hi < 0) hi = v;
        else {
            if (len == cap) out = xrealloc(out, cap *= 2);
            out[len++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    fclose(f);
    *n = len;
    return out;
}

static int cmd_decode(int argc, char **argv) {
    int bad = 0;
    for (int i = 0; i < argc; i++) {
        size_t n;
        uint8_t *b = read_hex_file(argv[i], &n);
        frame_t f;
        size_t used = 0;
        int rc = decode_frame(b, n, &f, &used);
        printf("{\"file\":");
        json_str(stdout, argv[i]);
        if (rc != 1 || used != n) {
            printf(",\"ok\":false,\"rc\":%d,\"bytes\":%zu,\"used\":%zu}\n", rc, n, used);
            bad++;
            free(b);
            continue;
        }
        printf(",\"ok\":true,\"serialize\":\"%s\",\"total\":%u,\"header_len\":%u,\"body_len\":%u,\"code\":%d,\"opaque\":%d,\"flag\":%d",
               f.ser ? "ROCKETMQ" : "JSON", f.total, f.hlen, f.blen, f.code, f.opaque, f.flag);
        if (f.ser == 0 && f.code == CODE_REGISTER && !(f.flag & 1)) {
            const char *k = memmem(f.hdr, f.hlen, "\"bodyCrc32\":\"", 13);
            if (k) {
                unsigned long hc = strtoul(k + 13, NULL, 10);
                uint32_t cc = rmq_crc(crc32_buf(0, f.body, f.blen));
                printf(",\"bodyCrc32_header\":%lu,\"bodyCrc32_computed\":%u,\"crc_match\":%s", hc, cc, hc == cc ? "true" : "false");
                if (hc != cc) bad++;
            }
        }
        printf("}\n");
        free(b);
    }
    return bad ? 1 : 0;
}

static void print_hex(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) printf("%02x", p[i]);
    printf("\n");
}

static int cmd_selftest(void) {
    int fails = 0;
    int passes = 0;
#define CHECK(cond, ...) do { if (cond) { printf("ok   " __VA_ARGS__); passes++; } else { printf("FAIL " __VA_ARGS__); fails++; } printf("\n"); } while (0)
    CHECK(crc32_buf(0, (const uint8_t *)"123456789", 9) == 0xCBF43926u, "crc32(\"123456789\") = cbf43926");
    /* combine vs direct on random data of odd sizes */
    int comb_ok = 1;
    for (int t = 0; t < 200; t++) {
        size_t la = rnd_below(3000), lb = rnd_below(200000) + 1;
        uint8_t *a = xmalloc(la + lb);
        for (size_t i = 0; i < la + lb; i++) a[i] = (uint8_t)rnd64();
        uint32_t whole = crc32_buf(0, a, la + lb);
        uint32_t c = crc32_combine(crc32_buf(0, a, la), crc32_buf(0, a + la, lb), lb);
        if (whole != c) comb_ok = 0;
        /* incremental update must agree too */
        if (crc32_buf(crc32_buf(0, a, la), a + la, lb) != whole) comb_ok = 0;
        free(a);
    }
    CHECK(comb_ok, "crc32_combine == crc32 of concatenation (200 random splits)");
    int32_t code = -1, op = -1, fl = -1;
    const char *h1 = "{\"code\":0,\"flag\":1,\"language\":\"JAVA\",\"opaque\":12345,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":407}";
    CHECK(!parse_hdr_json((const uint8_t *)h1, strlen(h1), &code, &op, &fl) && code == 0 && op == 12345 && fl == 1, "parse route response header");
    const char *h2 = "{\"code\":17,\"flag\":1,\"language\":\"JAVA\",\"opaque\":7,\"remark\":\"No topic route info {x} \\\"q\\\"\\nSee\",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":409}";
    CHECK(!parse_hdr_json((const uint8_t *)h2, strlen(h2), &code, &op, &fl) && code == 17 && op == 7 && fl == 1, "parse header with remark containing braces/escapes");
    const char *h3 = " { \"extFields\" : {\"opaque\":\"99\",\"code\":[1,2]} , \"opaque\" : -5 , \"code\" : 1 , \"flag\" : 3 } ";
    CHECK(!parse_hdr_json((const uint8_t *)h3, strlen(h3), &code, &op, &fl) && code == 1 && op == -5 && fl == 3, "nested extFields are skipped, whitespace tolerated");
    const char *h4 = "{\"code\":0,\"flag\":1}";
    CHECK(parse_hdr_json((const uint8_t *)h4, strlen(h4), &code, &op, &fl) != 0, "missing opaque -> error");
    const char *h5 = "{\"code\":0,\"flag\":1,\"opaque\":3";
    CHECK(parse_hdr_json((const uint8_t *)h5, strlen(h5), &code, &op, &fl) != 0, "truncated header -> error");
    /* route request encoding round trip */
    uint8_t buf[512];
    str_t t = {"TopicTest", 9};
    size_t n = enc_request(buf, &t, 32);
    frame_t f;
    size_t used;
    CHECK(decode_frame(buf, n, &f, &used) == 1 && used == n && f.code == 105 && f.opaque == 32 && f.flag == 0 && f.blen == 0,
          "route request frame decodes (code 105, opaque 32, no body)");
    CHECK(decode_frame(buf, n - 1, &f, &used) == 0, "short buffer -> need more");
    uint8_t badf[8] = {0, 0, 0, 4, 0, 0, 0, 9};
    CHECK(decode_frame(badf, 8, &f, &used) == -1, "header length > total-4 -> protocol error");
    /* binary header */
    uint8_t bin[8 + 21] = {0};
    put_be32(bin, 4 + 21);
    put_be32(bin + 4, (1u << 24) | 21);
    bin[8] = 0; bin[9] = 17; /* code 17 */
    put_be32(bin + 8 + 5, 77);
    put_be32(bin + 8 + 9, 1);
    CHECK(decode_frame(bin, sizeof bin, &f, &used) == 1 && f.ser == 1 && f.code == 17 && f.opaque == 77 && f.flag == 1, "ROCKETMQ binary header decodes");
    /* histogram */
    hist_t *h = xcalloc(1, sizeof *h);
    for (uint64_t v = 1; v <= 100000; v++) hist_add(h, v * 1000); /* 1us .. 100ms uniform */
    double p50 = hist_q(h, .5), p99 = hist_q(h, .99);
    CHECK(p50 > 49.0e6 && p50 < 51.0e6 && p99 > 97.5e6 && p99 < 100.5e6, "histogram percentiles within 2%% (p50 %.0f ns, p99 %.0f ns)", p50, p99);
    int mono = 1;
    for (int i = 1; i < HB; i++) if (hval_mid(i) <= hval_mid(i - 1)) mono = 0;
    CHECK(mono, "histogram buckets strictly increasing");
    free(h);
    printf("%d passed, %d failed\n", passes, fails);
    return fails ? 1 : 0;
}

static void usage(FILE *o) {
    fprintf(o,
            "usage: rmqload MODE [options]\n"
            "modes:\n"
            "  route      GET_ROUTEINFO_BY_TOPIC (105) load; with -B>0 first registers a broker layout (kept alive)\n"
            "  register   REGISTER_BROKER (103) load from -C x -B simulated brokers\n"
            "  mixed      register (bump, 0..99 ms pause; 4x8 brokers, 10000 topics/cluster) + route over all topics\n"
            "  selftest                          CRC / parser / histogram checks\n"
            "  decode FILE.hex...                decode captured frames (one hex frame per file)\n"
            "  encode-route TOPIC OPAQUE         print the request frame in hex (-V sets version)\n"
            "  encode-register                   print one REGISTER_BROKER frame in hex (layout options,\n"
            "                                    --counter N --timestamp MS --opaque N)\n"
            "  layout MODE [options] --sample N  the layout's figures and N topics spread over it, each with\n"
            "                                    the broker names and addresses its route lists (one JSON line)\n"
            "common:\n"
            "  -a, --addr HOST:PORT       server (127.0.0.1:9876)\n"
            "  -d, --duration DUR         measurement window (10s); units s, ms, us, m\n"
            "  -w, --warmup DUR           warm-up before the window (3s)\n"
            "      --drain DUR            wait for replies in flight after the window (5s)\n"
            "      --setup-timeout DUR    max time for the first registration of every broker (180s)\n"
            "  -V, --req-version N        'version' in request headers (409)\n"
            "      --server-pid PID       sample server CPU time (/proc/PID/stat) and VmHWM/VmRSS\n"
            "      --seed N               PRNG seed (topic choice, pauses)\n"
            "      --label STR            copied into the JSON result\n"
            "      --hold DUR             after the result, brokers keep registering on their schedule and\n"
            "                             connect again whenever the server went away (a restart), until\n"
            "                             SIGTERM/SIGINT or DUR; then a {\"hold\":...} line\n"
            "  -q, --quiet                no progress lines on stderr;  -v, --verbose: per-second progress\n"
            "route side:\n"
            "  -c, --conns N              connections (32; register mode 0)\n"
            "  -D, --depth N              requests in flight per connection, pipelined (8)\n"
            "      --code N               105 GET_ROUTEINFO_BY_TOPIC (default), 206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER,\n"
            "                             224 GET_TOPICS_BY_CLUSTER (over the layout's clusters)\n"
            "  -t, --topic-pattern PAT    topic names, printf pattern with one %%d (e.g. Topic-%%d)\n"
            "  -n, --topic-count N        number of topics for -t (100), drawn uniformly\n"
            "      --topic-first N        first index for -t (0)\n"
            "      --topic-file FILE      topics, one per line (drawn uniformly)\n"
            "                             default: every topic of the broker layout (-C/-B/-T)\n"
            "      --dump-response FILE   save the first code-0 route reply frame (raw bytes)\n"
            "      --no-check-body        don't require code-0 bodies to look like a JSON object\n"
            "broker / register side:\n"
            "  -C, --clusters N           clusters (1; mixed 4)\n"
            "  -B, --brokers N            brokers per cluster (route 0, register 1, mixed 8)\n"
            "  -T, --topics N             topics per broker (route 100, register 10000, mixed 10000)\n"
            "      --shared | --distinct  brokers of a cluster carry the same T topics (mixed default)\n"
            "                             or T topics of their own (route/register default)\n"
            "      --width W              topic t is carried by the W broker names (t+o) mod NB, o < W; each\n"
            "                             name carries -T of them, NB*T/W topics in all (NB = -C x -B)\n"
            "      --slaves N             each broker name also has N slaves (brokerId 1..N), own addresses (0)\n"
            "      --split N              5.x enableSplitRegistration: one request per N topics, then one with\n"
            "                             the rest, sent one after the other, each with the next dataVersion\n"
            "      --body-5x              register as a 5.x broker (TopicConfig attributes, mapping tables,\n"
            "                             enableActingMaster)\n"
            "      --reg-pattern PAT      registered topic names, one %%d (BenchTopic-%%d; mixed %%d)\n"
            "      --rand-prefix L        prefix L pseudo-random letters (deterministic per index) (0; mixed 32)\n"
            "      --queues N             read/write queue nums per topic (8);  --perm N (6)\n"
            "      --bump | --no-bump     new dataVersion {counter+1, timestamp=now} on every registration or not\n"
            "                             (register/mixed: bump; route heartbeats: no-bump)\n"
            "  -i, --interval DUR         per-broker fixed period (heartbeat-like, staggered)\n"
            "      --sleep-max MS         random pause 0..MS-1 ms after each reply (mixed 100)\n"
            "                             (neither -i nor --sleep-max: as fast as possible)\n"
            "      --reg-conc N           max registrations in flight over all brokers (0 = one per broker)\n"
            "      --reg-rate R           cap total registrations/s (after setup)\n"
            "      --heartbeat DUR        route mode: re-register (constant version) every DUR (30s, 0 = off)\n"
            "      --broker-port N        brokers advertise 127.0.0.1:(N+10k), HA port +1 (30911)\n"
            "      --cluster-fmt FMT      cluster name, one %%d (BenchCluster-%%d)\n"
            "      --broker-fmt FMT       broker name, two %%d: cluster, broker (BenchBroker-%%d-%%d)\n"
            "      --no-register          compute the layout's topic names but don't register (route mode)\n"
            "Output: one JSON line on stdout. Latencies in microseconds, from writing the request to\n"
            "decoding its reply (measured on the client, includes client queueing).\n");
}

enum {
    O_DRAIN = 1000, O_SETUPTO, O_SPID, O_SEED, O_LABEL, O_TFIRST, O_TFILE, O_DUMP, O_NOCHECK, O_SHARED, O_DISTINCT,
    O_REGPAT, O_RANDP, O_QUEUES, O_PERM, O_BUMP, O_NOBUMP, O_SLEEPMAX, O_REGCONC, O_REGRATE, O_HB, O_BPORT,
    O_CFMT, O_BFMT, O_NOREG, O_COUNTER, O_TS, O_OPAQUE, O_SLAVES, O_WIDTH, O_SPLIT, O_BODY5, O_CODE, O_HOLD, O_SAMPLE
};
static const struct option lopts[] = {
    {"addr", 1, 0, 'a'}, {"duration", 1, 0, 'd'}, {"warmup", 1, 0, 'w'}, {"drain", 1, 0, O_DRAIN},
    {"setup-timeout", 1, 0, O_SETUPTO}, {"req-version", 1, 0, 'V'}, {"server-pid", 1, 0, O_SPID},
    {"seed", 1, 0, O_SEED}, {"label", 1, 0, O_LABEL}, {"quiet", 0, 0, 'q'}, {"verbose", 0, 0, 'v'},
    {"conns", 1, 0, 'c'}, {"depth", 1, 0, 'D'}, {"topic-pattern", 1, 0, 't'}, {"topic-count", 1, 0, 'n'},
    {"topic-first", 1, 0, O_TFIRST}, {"topic-file", 1, 0, O_TFILE}, {"dump-response", 1, 0, O_DUMP},
    {"no-check-body", 0, 0, O_NOCHECK}, {"clusters", 1, 0, 'C'}, {"brokers", 1, 0, 'B'}, {"topics", 1, 0, 'T'},
    {"shared", 0, 0, O_SHARED}, {"distinct", 0, 0, O_DISTINCT}, {"reg-pattern", 1, 0, O_REGPAT},
    {"rand-prefix", 1, 0, O_RANDP}, {"queues", 1, 0, O_QUEUES}, {"perm", 1, 0, O_PERM}, {"bump", 0, 0, O_BUMP},
    {"no-bump", 0, 0, O_NOBUMP}, {"interval", 1, 0, 'i'}, {"sleep-max", 1, 0, O_SLEEPMAX},
    {"reg-conc", 1, 0, O_REGCONC}, {"reg-rate", 1, 0, O_REGRATE}, {"heartbeat", 1, 0, O_HB},
    {"broker-port", 1, 0, O_BPORT}, {"cluster-fmt", 1, 0, O_CFMT}, {"broker-fmt", 1, 0, O_BFMT},
    {"no-register", 0, 0, O_NOREG}, {"counter", 1, 0, O_COUNTER}, {"timestamp", 1, 0, O_TS},
    {"opaque", 1, 0, O_OPAQUE}, {"slaves", 1, 0, O_SLAVES}, {"width", 1, 0, O_WIDTH}, {"split", 1, 0, O_SPLIT},
    {"body-5x", 0, 0, O_BODY5}, {"code", 1, 0, O_CODE}, {"hold", 1, 0, O_HOLD}, {"sample", 1, 0, O_SAMPLE},
    {"help", 0, 0, 'h'}, {0, 0, 0, 0}};

static void parse_opts(int argc, char **argv) {
    int set_conns = 0, set_C = 0, set_B = 0, set_T = 0, set_shared = 0, set_bump = 0, set_pat = 0, set_rp = 0, set_sleep = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "a:d:w:V:qvc:D:t:n:C:B:T:i:h", lopts, NULL)) != -1) {
        switch (ch) {
        case 'a': {
            const char *colon = strrchr(optarg, ':');
            if (!colon) die("--addr wants HOST:PORT");
            size_t hl = (size_t)(colon - optarg);
            if (hl >= sizeof cfg.host) die("host too long");
            memcpy(cfg.host, optarg, hl);
            cfg.host[hl] = 0;
            cfg.port = (int)parse_long(colon + 1, "port");
            break;
        }
        case 'd': cfg.dur = parse_dur(optarg); break;
        case 'w': cfg.warm = parse_dur(optarg); break;
        case O_DRAIN: cfg.drain = parse_dur(optarg); break;
        case O_SETUPTO: cfg.setup_timeout = parse_dur(optarg); break;
        case 'V': cfg.version = (int)parse_long(optarg, "version"); break;
        case O_SPID: cfg.server_pid = (int)parse_long(optarg, "pid"); break;
        case O_SEED: cfg.seed = (uint64_t)parse_long(optarg, "seed"); break;
        case O_LABEL: cfg.label = optarg; break;
        case 'q': cfg.quiet = 1; break;
        case 'v': cfg.verbose = 1; break;
        case 'c': cfg.conns = (int)parse_long(optarg, "conns"); set_conns = 1; break;
        case 'D': cfg.depth = (int)parse_long(optarg, "depth"); break;
        case 't': cfg.topic_pattern = optarg; check_pattern(optarg, 1, "topic"); break;
        case 'n': cfg.topic_count = parse_long(optarg, "topic count"); break;
        case O_TFIRST: cfg.topic_first = parse_long(optarg, "topic-first"); break;
        case O_TFILE: cfg.topic_file = optarg; break;
        case O_DUMP: cfg.dump_response = optarg; break;
        case O_NOCHECK: cfg.check_body = 0; break;
        case 'C': cfg.clusters = (int)parse_long(optarg, "clusters"); set_C = 1; break;
        case 'B': cfg.brokers = (int)parse_long(optarg, "brokers"); set_B = 1; break;
        case 'T': cfg.topics = (int)parse_long(optarg, "topics"); set_T = 1; break;
        case O_SHARED: cfg.shared = 1; set_shared = 1; break;
        case O_DISTINCT: cfg.shared = 0; set_shared = 1; break;
        case O_REGPAT: cfg.reg_pattern = optarg; check_pattern(optarg, 1, "reg"); set_pat = 1; break;
        case O_RANDP: cfg.rand_prefix = (int)parse_long(optarg, "rand-prefix"); set_rp = 1; break;
        case O_QUEUES: cfg.queues = (int)parse_long(optarg, "queues"); break;
        case O_PERM: cfg.perm = (int)parse_long(optarg, "perm"); break;
        case O_BUMP: cfg.bump = 1; set_bump = 1; break;
        case O_NOBUMP: cfg.bump = 0; set_bump = 1; break;
        case 'i': cfg.interval = parse_dur(optarg); break;
        case O_SLEEPMAX: cfg.sleep_max_ms = parse_long(optarg, "sleep-max"); set_sleep = 1; break;
        case O_REGCONC: cfg.reg_conc = (int)parse_long(optarg, "reg-conc"); break;
        case O_REGRATE: cfg.reg_rate = strtod(optarg, NULL); break;
        case O_HB: cfg.heartbeat = parse_dur(optarg); break;
        case O_BPORT: cfg.broker_port = (int)parse_long(optarg, "broker-port"); break;
        case O_CFMT: cfg.cluster_fmt = optarg; check_pattern(optarg, 1, "cluster"); break;
        case O_BFMT: cfg.broker_fmt = optarg; check_pattern(optarg, 2, "broker"); break;
        case O_NOREG: cfg.no_register = 1; break;
        case O_COUNTER: cfg.enc_counter = strtoll(optarg, NULL, 10); break;
        case O_TS: cfg.enc_timestamp = strtoll(optarg, NULL, 10); break;
        case O_OPAQUE: cfg.enc_opaque = parse_long(optarg, "opaque"); break;
        case O_SLAVES: cfg.slaves = (int)parse_long(optarg, "slaves"); break;
        case O_WIDTH: cfg.width = (int)parse_long(optarg, "width"); break;
        case O_SPLIT: cfg.split = (int)parse_long(optarg, "split"); break;
        case O_BODY5: cfg.body5 = 1; break;
        case O_CODE: cfg.code = (int)parse_long(optarg, "code"); break;
        case O_HOLD: cfg.hold = parse_dur(optarg); break;
        case O_SAMPLE: cfg.sample = parse_long(optarg, "sample"); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    /* mode-dependent defaults */
    if (cfg.mode == M_ROUTE) {
        if (!set_B) cfg.brokers = 0;
        if (!set_T) cfg.topics = 100;
        if (!set_bump) cfg.bump = 0;
    } else if (cfg.mode == M_REGISTER) {
        if (!set_conns) cfg.conns = 0;
        if (!set_B) cfg.brokers = 1;
        if (!set_T) cfg.topics = 10000;
        if (!set_bump) cfg.bump = 1;
    } else if (cfg.mode == M_MIXED) {
        if (!set_C) cfg.clusters = 4;
        if (!set_B) cfg.brokers = 8;
        if (!set_T) cfg.topics = 10000;
        if (!set_shared) cfg.shared = 1;
        if (!set_bump) cfg.bump = 1;
        if (!set_pat) cfg.reg_pattern = "%d";
        if (!set_rp) cfg.rand_prefix = 32;
        if (!set_sleep && !cfg.interval) cfg.sleep_max_ms = 100;
    }
    if (cfg.conns < 0 || cfg.depth < 1 || cfg.depth > 65536) die("bad -c/-D");
    if (cfg.code != CODE_ROUTE && cfg.code != CODE_ALL_TOPICS && cfg.code != CODE_CLUSTER_TOPICS)
        die("--code %d: only 105, 206 and 224 are sent", cfg.code);
    if (cfg.slaves < 0 || cfg.slaves > 9) die("--slaves: 0 to 9");
    if (cfg.split < 0) die("--split: 0 (whole) or topics per request");
    if (cfg.width < 0 || (cfg.width && (cfg.topics % cfg.width || cfg.width > (long)cfg.clusters * cfg.brokers)))
        die("--width W: W must divide -T and be at most the number of broker names (-C x -B)");
    if (cfg.clusters < 1 || cfg.brokers < 0 || cfg.topics < 0) die("bad -C/-B/-T");
    (void)set_T;
}

static void defaults(void) {
    memset(&cfg, 0, sizeof cfg);
    strcpy(cfg.host, "127.0.0.1");
    cfg.port = 9876;
    cfg.dur = 10000000000ull;
    cfg.warm = 3000000000ull;
    cfg.drain = 5000000000ull;
    cfg.setup_timeout = 180000000000ull;
    cfg.version = 409;
    cfg.conns = 32;
    cfg.depth = 8;
    cfg.code = CODE_ROUTE;
    cfg.check_body = 1;
    cfg.clusters = 1;
    cfg.reg_pattern = "BenchTopic-%d";
    cfg.queues = 8;
    cfg.perm = 6;
    cfg.heartbeat = 30000000000ull;
    cfg.broker_port = 30911;
    cfg.cluster_fmt = "BenchCluster-%d";
    cfg.broker_fmt = "BenchBroker-%d-%d";
    cfg.enc_counter = 1;
    cfg.enc_timestamp = -1;
}

static int mode_of(const char *m) {
    if (!strcmp(m, "route")) return M_ROUTE;
    if (!strcmp(m, "register")) return M_REGISTER;
    if (!strcmp(m, "mixed")) return M_MIXED;
    return 0;
}

static int cmd_encode_route(int argc, char **argv) {
    optind = 2;
    cfg.mode = M_ROUTE;
    parse_opts(argc, argv);
    if (argc - optind < 2) die("encode-route TOPIC OPAQUE");
    request_hdr_init(CODE_ROUTE, cfg.version);
    str_t t;
    t.s = json_escape_dup(argv[optind], &t.len);
    uint8_t *buf = xmalloc((size_t)t.len + 256);
    size_t n = enc_request(buf, &t, (int32_t)parse_long(argv[optind + 1], "opaque"));
    print_hex(buf, n);
    return 0;
}

static int cmd_encode_register(int argc, char **argv) {
    optind = 2;
    cfg.mode = M_REGISTER;
    parse_opts(argc, argv);
    cfg.brokers = 1;
    cfg.clusters = 1;
    cfg.slaves = 0;
    cfg.split = 0;
    cfg.width = 0;
    setup_brokers();
    broker_t *b = &brokers[0];
    b->counter = cfg.enc_counter;
    if (cfg.enc_timestamp >= 0) b->ts_ms = cfg.enc_timestamp;
    broker_build(b, (int32_t)cfg.enc_opaque);
    uint8_t *all = xmalloc(b->flen);
    memcpy(all, b->hbuf, b->hlen);
    memcpy(all + b->hlen, b->parts[0]->buf, b->parts[0]->len);
    print_hex(all, b->flen);
    return 0;
}

int main(int argc, char **argv) {
    crc_init();
    defaults();
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) { usage(argc < 2 ? stderr : stdout); return argc < 2 ? 2 : 0; }
    const char *m = argv[1];
    if (!strcmp(m, "selftest")) { request_hdr_init(CODE_ROUTE, cfg.version); return cmd_selftest(); }
    if (!strcmp(m, "decode")) return cmd_decode(argc - 2, argv + 2);
    if (!strcmp(m, "encode-route")) return cmd_encode_route(argc, argv);
    if (!strcmp(m, "encode-register")) return cmd_encode_register(argc, argv);
    if (!strcmp(m, "layout")) { /* layout MODE [options] --sample N */
        if (argc < 3 || !(cfg.mode = mode_of(argv[2]))) die("layout route|register|mixed [layout options] [--sample N]");
        optind = 3;
        parse_opts(argc, argv);
        return cmd_layout();
    }
    if (!(cfg.mode = mode_of(m))) { usage(stderr); return 2; }
    optind = 2;
    parse_opts(argc, argv);
    return run_load();
}
