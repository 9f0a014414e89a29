/* The simulated brokers: names, which topics each broker name carries, their
 * REGISTER_BROKER bodies (4.9 or 5.x form, whole or split as 5.x's
 * enableSplitRegistration splits them) and request frames.
 *
 * Broker names: clusters x brokers (name index k = cluster * brokers + b); each name has a
 * master (brokerId 0) and --slaves slaves (ids 1..N), each its own instance with its own
 * address.  Topics of name k:
 *   --distinct  k*T .. k*T+T-1
 *   --shared    c*T .. c*T+T-1 for its cluster c (every name of a cluster carries them)
 *   --width W   topic t is carried by the W names (t+o) mod NB, o < W (the Rust NameServer's
 *               fixture); each name carries T of them, NB*T/W topics in all              */
#include "rmqload.h"

#include <stdlib.h>
#include <string.h>

broker_t *brokers;
int n_brokers;
str_t *route_args;
long n_route_args;

long layout_names(void) { return cfg.brokers > 0 ? (long)cfg.clusters * cfg.brokers : 0; }

long layout_distinct_topics(void) {
    long nb = layout_names();
    if (nb <= 0) return 0;
    if (cfg.width > 0) return nb * cfg.topics / cfg.width;
    return cfg.shared ? (long)cfg.clusters * cfg.topics : nb * cfg.topics;
}

/* (topic, broker instance) pairs registered: what every instance's table lists */
long layout_topic_configs(void) { return layout_names() * (1 + cfg.slaves) * (long)cfg.topics; }

static int names_of_topic(void) {
    if (cfg.width > 0) return cfg.width;
    return cfg.shared ? cfg.brokers : 1;
}

void layout_topic_name(long idx, char *buf, size_t cap) {
    int L = cfg.rand_prefix;
    if (L > 64) L = 64;
    size_t k = 0;
    uint64_t x = splitmix64((uint64_t)idx * 0x100000001B3ull + 0xC0FFEE);
    for (int i = 0; i < L; i++) {
        if ((i & 7) == 0 && i) x = splitmix64(x);
        unsigned r = (unsigned)((x >> ((i & 7) * 8)) & 0xFF) % 52;
        buf[k++] = (char)(r < 26 ? 'A' + r : 'a' + r - 26);
    }
    snprintf(buf + k, cap - k, cfg.reg_pattern, (int)idx);
}

/* the topic indexes name k carries, in its table's order */
static long *name_topics(long k) {
    long *t = xmalloc(sizeof(long) * (size_t)(cfg.topics ? cfg.topics : 1));
    long nb = layout_names();
    if (cfg.width > 0) {
        long n = 0;
        for (long j = 0; j < cfg.topics / cfg.width; j++)
            for (int o = 0; o < cfg.width; o++) t[n++] = j * nb + ((k - o) % nb + nb) % nb;
    } else {
        long first = cfg.shared ? (k / cfg.brokers) * cfg.topics : k * cfg.topics;
        for (long i = 0; i < cfg.topics; i++) t[i] = first + i;
    }
    return t;
}

/* ------------------------------------------------------------------ route side arguments */

static void add_arg(long cap, const char *s) {
    if (n_route_args == 0) route_args = xmalloc(sizeof(str_t) * (size_t)cap);
    route_args[n_route_args].s = json_escape_dup(s, &route_args[n_route_args].len);
    n_route_args++;
}

static void args_from_file(const char *path) {
    char buf[512];
    FILE *f = fopen(path, "r");
    if (!f) die("cannot open topic file %s", path);
    long cap = 1024;
    route_args = xmalloc(sizeof(str_t) * (size_t)cap);
    while (fgets(buf, sizeof buf, f)) {
        size_t l = strlen(buf);
        while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r' || buf[l - 1] == ' ')) buf[--l] = 0;
        if (!l) continue;
        if (n_route_args == cap) route_args = xrealloc(route_args, sizeof(str_t) * (size_t)(cap *= 2));
        route_args[n_route_args].s = json_escape_dup(buf, &route_args[n_route_args].len);
        n_route_args++;
    }
    fclose(f);
    if (!n_route_args) die("topic file %s is empty", path);
}

/* what the read requests ask for: topics (105), cluster names (224), nothing (206) */
void build_route_args(void) {
    char buf[512];
    if (cfg.code == CODE_ALL_TOPICS) { add_arg(1, ""); return; }
    if (cfg.code == CODE_CLUSTER_TOPICS) {
        for (int c = 0; c < cfg.clusters; c++) {
            snprintf(buf, sizeof buf, cfg.cluster_fmt, c);
            add_arg(cfg.clusters, buf);
        }
        return;
    }
    if (cfg.topic_file) { args_from_file(cfg.topic_file); return; }
    if (cfg.topic_pattern) {
        long n = cfg.topic_count > 0 ? cfg.topic_count : 100;
        for (long i = 0; i < n; i++) {
            snprintf(buf, sizeof buf, cfg.topic_pattern, (int)(cfg.topic_first + i));
            add_arg(n, buf);
        }
        return;
    }
    long n = layout_distinct_topics();
    if (n <= 0) die("route side needs topics: -t PATTERN [-n N], --topic-file FILE, or a broker layout (-B/-T)");
    for (long i = 0; i < n; i++) {
        layout_topic_name(i, buf, sizeof buf);
        add_arg(n, buf);
    }
}

/* ------------------------------------------------------------------ bodies */

/* topicConfigTable of the given topics and what closes the body: the constant part */
static suffix_t *build_suffix(const long *idx, int ntopics) {
    suffix_t *s = xcalloc(1, sizeof *s);
    size_t cap = 256 + (size_t)ntopics * 420, len = 0;
    char *b = xmalloc(cap);
    char name[512];
    const char *attrs = cfg.body5 ? "\"attributes\":{}," : "";
    b[len++] = '{';
    for (int k = 0; k < ntopics; k++) {
        layout_topic_name(idx[k], name, sizeof name);
        int el;
        char *e = json_escape_dup(name, &el);
        if (len + 2 * (size_t)el + 256 > cap) b = xrealloc(b, cap = cap * 2 + 2 * (size_t)el + 256);
        len += (size_t)sprintf(b + len,
                               "%s\"%s\":{%s\"order\":false,\"perm\":%d,\"readQueueNums\":%d,\"topicFilterType\":\"SINGLE_TAG\","
                               "\"topicName\":\"%s\",\"topicSysFlag\":0,\"writeQueueNums\":%d}",
                               k ? "," : "", e, attrs, cfg.perm, cfg.queues, e, cfg.queues);
        free(e);
    }
    /* topicConfigTable, [5.x mapping tables,] topicConfigSerializeWrapper, RegisterBrokerBody */
    const char *tail = cfg.body5 ? "},\"topicQueueMappingDetailMap\":{},\"topicQueueMappingInfoMap\":{}}}" : "}}}";
    size_t tl = strlen(tail);
    if (len + tl > cap) b = xrealloc(b, cap = len + tl);
    memcpy(b + len, tail, tl);
    len += tl;
    s->buf = (uint8_t *)b;
    s->len = len;
    s->crc = crc32_buf(0, s->buf, len);
    s->ntopics = ntopics;
    return s;
}

/* a name's table as it is registered: whole, or as 5.x splits it (--split N): a request each
 * time N topics are collected, then one with the rest (empty when N divides the table) */
static suffix_t **build_parts(long k, int *nparts) {
    long *t = name_topics(k);
    int n = cfg.split > 0 ? cfg.topics / cfg.split + 1 : 1;
    suffix_t **parts = xmalloc(sizeof(suffix_t *) * (size_t)n);
    for (int i = 0; i < n; i++) {
        int first = cfg.split > 0 ? i * cfg.split : 0;
        int count = cfg.split > 0 ? (i < n - 1 ? cfg.split : cfg.topics - first) : cfg.topics;
        parts[i] = build_suffix(t + first, count);
    }
    free(t);
    *nparts = n;
    return parts;
}

static void broker_names(broker_t *b) {
    snprintf(b->cname, sizeof b->cname, cfg.cluster_fmt, b->cluster);
    snprintf(b->bname, sizeof b->bname, cfg.broker_fmt, b->cluster, b->bidx);
    int port = cfg.broker_port + 10 * b->gidx;
    snprintf(b->addr, sizeof b->addr, "127.0.0.1:%d", port);
    snprintf(b->haddr, sizeof b->haddr, "127.0.0.1:%d", port + 1);
}

void setup_brokers(void) {
    long nb = layout_names();
    int per = 1 + cfg.slaves;
    n_brokers = (int)(nb * per);
    if (!n_brokers) return;
    brokers = xcalloc((size_t)n_brokers, sizeof(broker_t));
    suffix_t ***shared = xcalloc((size_t)cfg.clusters, sizeof(suffix_t **));
    int64_t t0 = wall_ms();
    for (long k = 0; k < nb; k++) {
        int c = (int)(k / cfg.brokers), nparts = 0;
        suffix_t **parts;
        if (cfg.shared && cfg.width == 0) {
            if (!shared[c]) shared[c] = build_parts(k, &nparts);
            else nparts = cfg.split > 0 ? cfg.topics / cfg.split + 1 : 1;
            parts = shared[c];
        } else parts = build_parts(k, &nparts);
        for (int id = 0; id < per; id++) { /* slaves send their master's table */
            broker_t *b = &brokers[k * per + id];
            b->cluster = c;
            b->bidx = (int)(k % cfg.brokers);
            b->id = id;
            b->name_idx = (int)k;
            b->gidx = (int)(k * per + id);
            broker_names(b);
            b->parts = parts;
            b->nparts = nparts;
            b->counter = 1;
            b->ts_ms = t0;
        }
    }
    free(shared);
}

size_t broker_body_bytes(const broker_t *b) {
    size_t n = 0;
    for (int i = 0; i < b->nparts; i++) n += b->parts[i]->len + 160;
    return n;
}

/* ------------------------------------------------------------------ frames */

/* build the pending frame of the broker's current part (all but its constant suffix) */
void broker_build(broker_t *b, int32_t opaque) {
    const suffix_t *suf = b->parts[b->part];
    char bp[320];
    int bpl = cfg.body5
        ? snprintf(bp, sizeof bp,
                   "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":%lld,\"stateVersion\":0,"
                   "\"timestamp\":%lld},\"mappingDataVersion\":{\"counter\":0,\"stateVersion\":0,\"timestamp\":%lld},\"topicConfigTable\":",
                   b->counter, b->ts_ms, b->ts_ms)
        : snprintf(bp, sizeof bp,
                   "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":{\"counter\":%lld,\"timestamp\":%lld},"
                   "\"topicConfigTable\":",
                   b->counter, b->ts_ms);
    uint32_t crc = rmq_crc(crc32_combine(crc32_buf(0, (const uint8_t *)bp, (size_t)bpl), suf->crc, suf->len));
    char *h = (char *)b->hbuf + 8;
    size_t room = sizeof b->hbuf - 8 - sizeof bp;
    int hl = snprintf(h, room,
                      "{\"code\":103,\"extFields\":{\"brokerId\":\"%d\",\"bodyCrc32\":\"%u\",\"clusterName\":\"%s\",\"brokerAddr\":\"%s\","
                      "\"haServerAddr\":\"%s\",\"compressed\":\"false\",%s\"brokerName\":\"%s\"},\"flag\":0,\"language\":\"JAVA\","
                      "\"opaque\":%d,\"serializeTypeCurrentRPC\":\"JSON\",\"version\":%d}",
                      b->id, crc, b->cname, b->addr, b->haddr, cfg.body5 ? "\"enableActingMaster\":\"false\"," : "", b->bname,
                      opaque, cfg.version);
    if (hl <= 0 || (size_t)hl >= room) die("register header too long");
    memcpy(h + hl, bp, (size_t)bpl);
    uint64_t total = 4 + (uint64_t)hl + (uint64_t)bpl + suf->len;
    if (total > 0x7FFFFFFFull) die("register frame of %llu bytes does not fit the length field", (unsigned long long)total);
    put_be32(b->hbuf, (uint32_t)total);
    put_be32(b->hbuf + 4, (uint32_t)hl);
    b->hlen = 8 + (size_t)hl + (size_t)bpl;
    b->flen = 4 + (size_t)total;
    b->blen = (size_t)bpl + suf->len;
    b->woff = 0;
}

/* ------------------------------------------------------------------ `rmqload layout` */

/* The layout's figures and --sample topics spread evenly over it, each with the number of
 * broker names and addresses its route lists: one JSON line. */
int cmd_layout(void) {
    long total = layout_distinct_topics(), names = layout_names();
    if (total <= 0) die("layout: no topics (-B/-T)");
    long n = cfg.sample > 0 ? (cfg.sample < total ? cfg.sample : total) : 0;
    int per_topic = names_of_topic();
    printf("{\"names\":%ld,\"brokers\":%ld,\"topics\":%ld,\"topics_per_broker\":%d,\"topic_configs\":%ld,\"sample\":[",
           names, names * (1 + cfg.slaves), total, cfg.topics, layout_topic_configs());
    char buf[512];
    for (long i = 0; i < n; i++) {
        layout_topic_name(i * total / n, buf, sizeof buf);
        printf("%s{\"topic\":", i ? "," : "");
        json_str(stdout, buf);
        printf(",\"names\":%d,\"addrs\":%d}", per_topic, per_topic * (1 + cfg.slaves));
    }
    printf("]}\n");
    return 0;
}
