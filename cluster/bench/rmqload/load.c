/* The route side (pipelined read requests matched by opaque) and the event loop's phases:
 * setup -> warm-up -> measurement -> drain -> [hold] -> done. */
#include "load.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int phase;
sstats_t rs, gs, ss;
val_t rval, gval;
hold_t hold;
int reg_inflight_total;
uint64_t reg_setup_resp;

static conn_t **rconns;
static int n_rconns;
static int route_on;
static FILE *dump_fp;
static volatile sig_atomic_t stop_hold;

/* ------------------------------------------------------------------ route side */

void conn_flush_route(conn_t *c) {
    while (c->ooff < c->olen) {
        ssize_t w = write(c->fd, c->ob + c->ooff, c->olen - c->ooff);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) { if (!c->want_out) ep_set(c, 1); return; }
            conn_close(c, strerror(errno));
            return;
        }
        if (phase == PH_MEAS) rs.tx_bytes += (uint64_t)w;
        c->ooff += (size_t)w;
    }
    c->ooff = c->olen = 0;
    if (c->want_out) ep_set(c, 0);
}

void route_fill(conn_t *c, uint64_t now) {
    if (!route_on || c->closed || !c->nfree) return;
    while (c->nfree) {
        int slot = c->freestk[--c->nfree];
        const str_t *t = &route_args[n_route_args > 1 ? rnd_below((uint32_t)n_route_args) : 0];
        size_t need = (size_t)t->len + 256;
        if (c->olen + need > c->ocap) {
            if (c->ooff) { memmove(c->ob, c->ob + c->ooff, c->olen - c->ooff); c->olen -= c->ooff; c->ooff = 0; }
            if (c->olen + need > c->ocap) c->ob = xrealloc(c->ob, c->ocap = (c->olen + need) * 2);
        }
        int32_t op = (int32_t)((((c->seq++) << c->sbits) | (uint32_t)slot) & 0x7FFFFFFF);
        c->olen += enc_request(c->ob + c->olen, t, op);
        c->sl_op[slot] = op;
        c->sl_t[slot] = now;
        c->sl_used[slot] = 1;
        c->inflight++;
        if (phase == PH_MEAS) rs.sent++;
    }
    conn_flush_route(c);
}

void route_frame(conn_t *c, const frame_t *f, const uint8_t *raw, uint64_t now) {
    rval.frames++;
    if (!(f->flag & 1)) { rval.not_response++; return; }
    int slot = f->opaque & ((1 << c->sbits) - 1);
    if (f->opaque < 0 || slot >= c->depth || !c->sl_used[slot] || c->sl_op[slot] != f->opaque) {
        rval.opaque_mismatch++;
        return;
    }
    uint64_t lat = now - c->sl_t[slot];
    c->sl_used[slot] = 0;
    c->freestk[c->nfree++] = slot;
    c->inflight--;
    if (f->code == 0) {
        if (f->blen == 0) rval.empty_body++;
        else if (cfg.check_body && (f->body[0] != '{' || f->body[f->blen - 1] != '}')) rval.bad_body++;
        if (dump_fp) {
            fwrite(raw, 1, 4 + (size_t)f->total, dump_fp);
            fclose(dump_fp);
            dump_fp = NULL;
        }
    }
    if (phase == PH_MEAS) {
        rs.resp++;
        rs.rx_bytes += 4 + (uint64_t)f->total;
        rs.body_bytes += f->blen;
        codes_add(&rs.codes, f->code);
        hist_add(&rs.h, lat);
    }
}

/* ------------------------------------------------------------------ the loop */

static void on_stop(int sig) { (void)sig; stop_hold = 1; }

static void raise_fd_limit(void) { /* a thousand brokers need a thousand sockets */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void start(void) {
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    rng_s = splitmix64(cfg.seed ? cfg.seed : (uint64_t)now_ns());
    request_hdr_init(cfg.code, cfg.version);
    if (cfg.mode != M_REGISTER && cfg.conns > 0) build_route_args();
    if (!cfg.no_register) setup_brokers();
    if (cfg.dump_response) {
        dump_fp = fopen(cfg.dump_response, "wb");
        if (!dump_fp) die("cannot write %s", cfg.dump_response);
    }
    loop_init();
    if (cfg.mode != M_REGISTER) n_rconns = cfg.conns;
    brokers_connect();
    if (!n_rconns && !n_brokers) die("nothing to do (no connections, no brokers)");
    if (!cfg.quiet && n_brokers)
        fprintf(stderr, "rmqload: registering %d brokers (%d topics each, %d request(s), body ~%zu bytes) ...\n",
                n_brokers, cfg.topics, brokers[0].nparts, broker_body_bytes(&brokers[0]));
}

/* the read connections, once the layout is set up: a server closes a connection idle for
 * longer than its serverChannelMaxIdleTimeSeconds (120 s), and a large layout's setup can
 * take longer than that */
static void open_reads(uint64_t now) {
    rconns = xcalloc((size_t)(n_rconns ? n_rconns : 1), sizeof(conn_t *));
    for (int i = 0; i < n_rconns; i++) rconns[i] = conn_new(K_ROUTE, i, cfg.depth, 1);
    for (int i = 0; i < n_rconns; i++) route_fill(rconns[i], now);
}

typedef struct {
    uint64_t t_end, t_meas0, t_meas1, next_tick, setup_t0, last_resp;
    result_t r;
} run_t;

static int setup_done(void) {
    for (int i = 0; i < n_brokers; i++) if (!brokers[i].registered_once && !brokers[i].dead) return 0;
    return 1;
}

/* the phase transitions due at `now`; returns 1 when the run is over, 3 on a setup timeout */
static int advance(run_t *x, uint64_t now) {
    if (phase == PH_SETUP) {
        if (setup_done()) {
            x->r.setup_s = (now - x->setup_t0) / 1e9;
            phase = PH_WARM;
            x->t_end = now + cfg.warm;
            if (!cfg.quiet) fprintf(stderr, "rmqload: setup %.2fs; warm-up %.1fs\n", x->r.setup_s, cfg.warm / 1e9);
            brokers_steady(now);
            route_on = 1;
            open_reads(now);
        } else if (now - x->setup_t0 > cfg.setup_timeout) {
            fprintf(stderr, "rmqload: setup timed out (%llu of %d brokers registered)\n", (unsigned long long)reg_setup_resp,
                    n_brokers);
            return 3;
        }
    }
    if (phase == PH_WARM && now >= x->t_end) {
        memset(&rs, 0, sizeof rs);
        memset(&gs, 0, sizeof gs);
        self_cpu(&x->r.cu, &x->r.cs, &x->r.maxrss);
        x->r.ccpu = x->r.cu + x->r.cs;
        x->r.sp0 = proc_sample(cfg.server_pid);
        x->r.mb0 = machine_busy_s();
        phase = PH_MEAS;
        x->t_meas0 = now;
        x->t_end = now + cfg.dur;
        x->next_tick = now + 1000000000ull;
        x->last_resp = 0;
        if (!cfg.quiet) fprintf(stderr, "rmqload: measuring %.1fs\n", cfg.dur / 1e9);
    }
    if (phase == PH_MEAS && cfg.verbose && now >= x->next_tick) {
        fprintf(stderr, "rmqload:   t=%.0fs route %llu/s register %llu total\n", (now - x->t_meas0) / 1e9,
                (unsigned long long)(rs.resp - x->last_resp), (unsigned long long)gs.resp);
        x->last_resp = rs.resp;
        x->next_tick += 1000000000ull;
    }
    if (phase == PH_MEAS && now >= x->t_end) {
        double cu, cs;
        x->t_meas1 = now;
        self_cpu(&cu, &cs, &x->r.maxrss);
        x->r.ccpu = cu + cs - x->r.ccpu;
        x->r.cu = cu - x->r.cu;
        x->r.cs = cs - x->r.cs;
        x->r.sp1 = proc_sample(cfg.server_pid);
        x->r.mb1 = machine_busy_s();
        x->r.rs = &rs;
        x->r.gs = &gs;
        phase = PH_DRAIN;
        route_on = 0;
        x->t_end = now + cfg.drain;
    }
    if (phase == PH_DRAIN) {
        int busy = reg_inflight_total > 0;
        for (int i = 0; i < n_rconns && !busy; i++) if (!rconns[i]->closed && rconns[i]->inflight) busy = 1;
        if (!busy || now >= x->t_end) return 1;
    }
    if (phase == PH_HOLD && (stop_hold || now >= x->t_end)) return 1;
    return 0;
}

static void dispatch(struct epoll_event *ev) {
    conn_t *c = ev->data.ptr;
    if (c->closed) return;
    if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR)) handle_read(c);
    if (c->closed) return;
    if (ev->events & EPOLLOUT) {
        if (c->kind == K_ROUTE) conn_flush_route(c);
        else if (c->br && c->br->writing) broker_flush(c->br);
        else ep_set(c, 0);
    }
}

static int loop(run_t *x) {
    struct epoll_event evs[512];
    for (;;) {
        uint64_t now = now_ns();
        int rc = advance(x, now);
        if (rc) return rc;
        uint64_t next = phase == PH_SETUP ? x->setup_t0 + cfg.setup_timeout : x->t_end;
        if (phase == PH_MEAS && cfg.verbose && x->next_tick < next) next = x->next_tick;
        if (n_brokers) sched_brokers(now, &next);
        now = now_ns();
        int to = 0;
        if (next > now) {
            uint64_t d = (next - now + 999999) / 1000000;
            to = d > 1000 ? 1000 : (int)d;
        }
        int ne = loop_wait(evs, 512, to);
        for (int i = 0; i < ne; i++) dispatch(&evs[i]);
    }
}

/* after the result: brokers keep registering on their schedule, connecting again whenever
 * the server went away, until SIGTERM/SIGINT or --hold passes; then one more JSON line */
static void hold_on(run_t *x) {
    signal(SIGTERM, on_stop);
    signal(SIGINT, on_stop);
    for (int i = 0; i < n_rconns; i++) conn_close(rconns[i], NULL);
    uint64_t t0 = now_ns();
    phase = PH_HOLD;
    x->t_end = t0 + cfg.hold;
    loop(x);
    hold.seconds = (now_ns() - t0) / 1e9;
    report_hold(stdout, &hold);
}

int run_load(void) {
    run_t x;
    memset(&x, 0, sizeof x);
    start();
    phase = PH_SETUP;
    x.setup_t0 = now_ns();
    int rc = loop(&x);
    if (rc == 3) return 3;
    /* lost = requests still in flight after the drain */
    for (int i = 0; i < n_rconns; i++) if (!rconns[i]->closed) rval.lost += (uint64_t)rconns[i]->inflight;
    gval.lost += (uint64_t)(reg_inflight_total > 0 ? reg_inflight_total : 0);
    x.r.sp2 = proc_sample(cfg.server_pid);
    x.r.win = (x.t_meas1 - x.t_meas0) / 1e9;
    x.r.n_rconns = n_rconns;
    x.r.rs = &rs;
    x.r.gs = &gs;
    x.r.ss = &ss;
    x.r.rval = &rval;
    x.r.gval = &gval;
    uint64_t errs = report_result(stdout, &x.r);
    if (cfg.hold) {
        reg_inflight_total = 0;
        for (int i = 0; i < n_brokers; i++) brokers[i].inflight = 0;
        hold_on(&x);
    }
    return errs ? 1 : 0;
}
