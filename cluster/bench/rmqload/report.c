/* The JSON result line, the hold line, and the /proc samples they need. */
#include "rmqload.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

procs_t proc_sample(int pid) {
    procs_t s = {0, 0, 0, 0, 0};
    if (pid <= 0) return s;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return s;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return s;
    unsigned long ut = 0, st = 0;
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return s;
    s.cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    f = fopen(path, "r");
    if (f) {
        while (fgets(buf, sizeof buf, f)) {
            if (!strncmp(buf, "VmHWM:", 6)) s.hwm_kb = atol(buf + 6);
            else if (!strncmp(buf, "VmRSS:", 6)) s.rss_kb = atol(buf + 6);
            else if (!strncmp(buf, "Threads:", 8)) s.threads = atol(buf + 8);
        }
        fclose(f);
    }
    s.ok = 1;
    return s;
}
/* whole machine: busy CPU seconds (all CPUs) from /proc/stat, to spot load from other processes */
double machine_busy_s(void) {
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[10] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5) return -1;
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]; /* user nice system irq softirq steal */
    return (double)busy / (double)sysconf(_SC_CLK_TCK);
}
double self_cpu(double *u, double *sy, long *maxrss) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *u = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    *sy = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    *maxrss = ru.ru_maxrss;
    return *u + *sy;
}

static void print_codes(FILE *o, const codes_t *c) {
    fprintf(o, "{");
    for (int i = 0; i < c->n; i++) fprintf(o, "%s\"%d\":%llu", i ? "," : "", c->code[i], (unsigned long long)c->cnt[i]);
    if (c->other) fprintf(o, "%s\"other\":%llu", c->n ? "," : "", (unsigned long long)c->other);
    fprintf(o, "}");
}
static void print_lat(FILE *o, const hist_t *h) {
    fprintf(o, "{\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f}",
            h->n ? h->sum / h->n / 1e3 : 0.0, hist_q(h, .50) / 1e3, hist_q(h, .90) / 1e3, hist_q(h, .99) / 1e3,
            hist_q(h, .999) / 1e3, h->max / 1e3);
}
static void print_val(FILE *o, const val_t *v) {
    fprintf(o,
            "{\"frames_checked\":%llu,\"parse_errors\":%llu,\"protocol_errors\":%llu,\"not_response\":%llu,"
            "\"opaque_mismatch\":%llu,\"empty_body\":%llu,\"bad_body\":%llu,\"conn_closed\":%llu,\"lost\":%llu}",
            (unsigned long long)v->frames, (unsigned long long)v->parse_err, (unsigned long long)v->proto_err,
            (unsigned long long)v->not_response, (unsigned long long)v->opaque_mismatch, (unsigned long long)v->empty_body,
            (unsigned long long)v->bad_body, (unsigned long long)v->conn_closed, (unsigned long long)v->lost);
}
void json_str(FILE *o, const char *s) {
    fputc('"', o);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', o);
        if ((unsigned char)*s < 0x20) fprintf(o, "\\u%04x", *s);
        else fputc(*s, o);
    }
    fputc('"', o);
}


static const char *mode_name(void) {
    return cfg.mode == M_ROUTE ? "route" : cfg.mode == M_REGISTER ? "register" : "mixed";
}

static void print_route(FILE *o, const result_t *r) {
    const sstats_t *s = r->rs;
    double win = r->win;
    fprintf(o, ",\"route\":{\"code\":%d,\"conns\":%d,\"depth\":%d,\"topics\":%ld,\"sent\":%llu,\"responses\":%llu,\"rps\":%.1f,\"codes\":",
            cfg.code, r->n_rconns, cfg.depth, n_route_args, (unsigned long long)s->sent, (unsigned long long)s->resp,
            win > 0 ? s->resp / win : 0.0);
    print_codes(o, &s->codes);
    fprintf(o, ",\"lat_us\":");
    print_lat(o, &s->h);
    fprintf(o, ",\"rx_bytes_per_s\":%.0f,\"tx_bytes_per_s\":%.0f,\"avg_resp_bytes\":%.1f,\"avg_body_bytes\":%.1f,\"validation\":",
            win > 0 ? s->rx_bytes / win : 0.0, win > 0 ? s->tx_bytes / win : 0.0,
            s->resp ? (double)s->rx_bytes / s->resp : 0.0, s->resp ? (double)s->body_bytes / s->resp : 0.0);
    print_val(o, r->rval);
    fprintf(o, "}");
}

static const char *schedule_name(void) {
    if (cfg.mode == M_ROUTE) return cfg.heartbeat ? "heartbeat" : "once";
    return cfg.interval ? "interval" : cfg.sleep_max_ms > 0 ? "sleep" : "asap";
}

static void print_register(FILE *o, const result_t *r) {
    const sstats_t *g = r->gs, *s = r->ss;
    double win = r->win;
    size_t bmin = SIZE_MAX, bmax = 0;
    for (int i = 0; i < n_brokers; i++) {
        size_t n = broker_body_bytes(&brokers[i]);
        if (n < bmin) bmin = n;
        if (n > bmax) bmax = n;
    }
    fprintf(o,
            ",\"register\":{\"brokers\":%d,\"clusters\":%d,\"names\":%ld,\"slaves\":%d,\"topics_per_broker\":%d,\"topics\":%ld,"
            "\"topic_configs\":%ld,\"layout\":\"%s\",\"width\":%d,\"split\":%d,\"requests_per_registration\":%d,\"body\":\"%s\","
            "\"bump\":%s,\"schedule\":\"%s\",\"body_bytes_min\":%zu,\"body_bytes_max\":%zu,\"setup_s\":%.3f,",
            n_brokers, cfg.clusters, layout_names(), cfg.slaves, cfg.topics, layout_distinct_topics(), layout_topic_configs(),
            cfg.width ? "width" : cfg.shared ? "shared" : "distinct", cfg.width, cfg.split, n_brokers ? brokers[0].nparts : 0,
            cfg.body5 ? "5.x" : "4.9", cfg.bump ? "true" : "false", schedule_name(), bmin, bmax, r->setup_s);
    fprintf(o, "\"setup\":{\"registrations\":%llu,\"regs_per_s\":%.2f,\"codes\":", (unsigned long long)s->resp,
            r->setup_s > 0 ? s->resp / r->setup_s : 0.0);
    print_codes(o, &s->codes);
    fprintf(o, ",\"lat_us\":");
    print_lat(o, &s->h);
    fprintf(o, "},\"sent\":%llu,\"responses\":%llu,\"regs_per_s\":%.2f,\"codes\":", (unsigned long long)g->sent,
            (unsigned long long)g->resp, win > 0 ? g->resp / win : 0.0);
    print_codes(o, &g->codes);
    fprintf(o, ",\"lat_us\":");
    print_lat(o, &g->h);
    fprintf(o, ",\"tx_bytes_per_s\":%.0f,\"avg_body_bytes\":%.0f", win > 0 ? g->tx_bytes / win : 0.0,
            g->resp ? (double)g->body_bytes / g->resp : 0.0);
    if (cfg.interval) fprintf(o, ",\"interval_s\":%.3f", cfg.interval / 1e9);
    if (cfg.mode == M_ROUTE && cfg.heartbeat) fprintf(o, ",\"heartbeat_s\":%.3f", cfg.heartbeat / 1e9);
    if (cfg.sleep_max_ms) fprintf(o, ",\"sleep_max_ms\":%ld", cfg.sleep_max_ms);
    if (cfg.reg_rate > 0) fprintf(o, ",\"rate_cap\":%.2f", cfg.reg_rate);
    if (cfg.reg_conc > 0) fprintf(o, ",\"conc_cap\":%d", cfg.reg_conc);
    fprintf(o, ",\"validation\":");
    print_val(o, r->gval);
    fprintf(o, "}");
}

static void print_machine(FILE *o, const result_t *r) {
    double win = r->win;
    fprintf(o, ",\"client\":{\"cpu_s\":%.3f,\"user_s\":%.3f,\"sys_s\":%.3f,\"cpu_util\":%.3f,\"maxrss_kb\":%ld}", r->ccpu, r->cu,
            r->cs, win > 0 ? r->ccpu / win : 0.0, r->maxrss);
    int sok = r->sp0.ok && r->sp1.ok;
    if (cfg.server_pid > 0) {
        fprintf(o, ",\"server\":{\"pid\":%d", cfg.server_pid);
        if (sok)
            fprintf(o, ",\"cpu_s\":%.2f,\"cpu_util\":%.3f,\"threads\":%ld,\"vmrss_kb\":%ld,\"vmhwm_kb\":%ld", r->sp1.cpu_s - r->sp0.cpu_s,
                    win > 0 ? (r->sp1.cpu_s - r->sp0.cpu_s) / win : 0.0, r->sp1.threads, r->sp2.ok ? r->sp2.rss_kb : r->sp1.rss_kb,
                    r->sp2.ok ? r->sp2.hwm_kb : r->sp1.hwm_kb);
        fprintf(o, "}");
    }
    if (r->mb0 >= 0 && r->mb1 >= 0 && win > 0) {
        double busy = (r->mb1 - r->mb0) / win, ours = r->ccpu / win + (sok ? (r->sp1.cpu_s - r->sp0.cpu_s) / win : 0.0);
        fprintf(o, ",\"machine\":{\"ncpu\":%ld,\"busy_cores\":%.3f,\"other_cores\":%.3f}", sysconf(_SC_NPROCESSORS_ONLN), busy,
                busy - ours);
    }
}

static uint64_t errors(const val_t *a, const val_t *b) {
    return a->parse_err + a->proto_err + a->not_response + a->opaque_mismatch + a->empty_body + a->bad_body + a->conn_closed +
           a->lost + b->parse_err + b->proto_err + b->not_response + b->opaque_mismatch + b->conn_closed + b->lost;
}

/* the result line; returns the number of errors in it */
uint64_t report_result(FILE *o, const result_t *r) {
    fprintf(o, "{\"tool\":\"rmqload\",\"mode\":\"%s\"", mode_name());
    if (cfg.label) { fprintf(o, ",\"label\":"); json_str(o, cfg.label); }
    fprintf(o, ",\"target\":\"%s:%d\",\"req_version\":%d,\"warmup_s\":%.3f,\"duration_s\":%.3f", cfg.host, cfg.port, cfg.version,
            cfg.warm / 1e9, r->win);
    if (r->n_rconns) print_route(o, r);
    if (n_brokers) print_register(o, r);
    print_machine(o, r);
    uint64_t errs = errors(r->rval, r->gval);
    fprintf(o, ",\"errors\":%llu}\n", (unsigned long long)errs);
    fflush(o);
    return errs;
}

void report_hold(FILE *o, const hold_t *h) {
    fprintf(o, "{\"hold\":{\"seconds\":%.3f,\"registrations\":%llu,\"failed\":%llu,\"reconnects\":%llu,\"connect_failed\":%llu,"
               "\"connections_lost\":%llu}}\n",
            h->seconds, (unsigned long long)h->regs_ok, (unsigned long long)h->regs_failed, (unsigned long long)h->reconnects,
            (unsigned long long)h->connect_failed, (unsigned long long)h->conn_lost);
    fflush(o);
}
