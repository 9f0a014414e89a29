/* The broker side: registrations (whole or split into parts, one request in flight per
 * broker), their schedule, and reconnecting while holding (a server restart). */
#include "load.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

static int32_t g_opaque = 0;
static uint64_t reg_next_token;

void brokers_connect(void) {
    for (int i = 0; i < n_brokers; i++) {
        brokers[i].c = conn_new(K_BROKER, i, 1, 1);
        brokers[i].c->br = &brokers[i];
        brokers[i].next_due = 0;
    }
}

void broker_flush(broker_t *b) {
    conn_t *c = b->c;
    while (b->writing) {
        struct iovec iov[2];
        int n = 0;
        const suffix_t *suf = b->parts[b->part];
        if (b->woff < b->hlen) { iov[n].iov_base = b->hbuf + b->woff; iov[n].iov_len = b->hlen - b->woff; n++; }
        size_t so = b->woff > b->hlen ? b->woff - b->hlen : 0;
        iov[n].iov_base = suf->buf + so;
        iov[n].iov_len = suf->len - so;
        n++;
        ssize_t w = writev(c->fd, iov, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) { if (!c->want_out) ep_set(c, 1); return; }
            conn_close(c, strerror(errno));
            return;
        }
        if (phase == PH_MEAS) gs.tx_bytes += (uint64_t)w;
        b->woff += (size_t)w;
        if (b->woff >= b->flen) b->writing = 0;
    }
    if (c->want_out) ep_set(c, 0);
}

/* send the broker's current part; a new dataVersion {counter+1, timestamp=now} with --bump,
 * and for every part of a split registration (5.x moves the version after each part) */
static void send_part(broker_t *b, uint64_t now) {
    if (b->nreg > 0 && (cfg.bump || cfg.split > 0)) {
        b->counter++;
        b->ts_ms = wall_ms();
    }
    if (++g_opaque <= 0) g_opaque = 1;
    b->op = g_opaque;
    broker_build(b, b->op);
    b->writing = 1;
    b->t_send = now;
    b->nreg++;
    broker_flush(b);
}

static void broker_send(broker_t *b, uint64_t now) {
    b->part = 0;
    b->t_first = now;
    b->inflight = 1;
    reg_inflight_total++;
    if (phase == PH_MEAS) gs.sent++;
    send_part(b, now);
}

/* when is broker b next due after a registration ends (or fails) at time now */
void broker_reschedule(broker_t *b, uint64_t now) {
    if (phase == PH_SETUP && !b->registered_once) { b->next_due = now; return; }
    if (cfg.mode == M_ROUTE) {
        if (cfg.heartbeat) b->next_due += cfg.heartbeat;
        else b->next_due = UINT64_MAX;
        if (b->next_due < now) b->next_due = now;
        return;
    }
    if (cfg.interval) {
        b->next_due += cfg.interval;
        if (b->next_due < now) b->next_due = now;
    } else if (cfg.sleep_max_ms > 0) {
        b->next_due = now + (uint64_t)rnd_below((uint32_t)cfg.sleep_max_ms) * 1000000ull;
    } else b->next_due = now;
}

static void registration_done(broker_t *b, const frame_t *f, uint64_t now) {
    b->inflight = 0;
    reg_inflight_total--;
    uint64_t lat = now - b->t_first;
    if (phase == PH_HOLD) {
        if (f->code == 0) hold.regs_ok++;
        else hold.regs_failed++;
    } else if (!b->registered_once) {
        b->registered_once = 1;
        reg_setup_resp++;
        ss.resp++;
        codes_add(&ss.codes, f->code);
        hist_add(&ss.h, lat);
        if (f->code != 0 && !cfg.quiet)
            fprintf(stderr, "rmqload: first registration of %s answered code %d\n", b->bname, f->code);
    }
    if (phase == PH_MEAS) {
        gs.resp++;
        codes_add(&gs.codes, f->code);
        hist_add(&gs.h, lat);
    }
    if (phase != PH_SETUP) broker_reschedule(b, now);
    else /* a registered broker keeps its heartbeat while the others set up (or waits) */
        b->next_due = cfg.mode == M_ROUTE && cfg.heartbeat ? now + cfg.heartbeat : UINT64_MAX;
}

void broker_frame(conn_t *c, const frame_t *f, uint64_t now) {
    broker_t *b = c->br;
    if (phase != PH_HOLD) gval.frames++;
    if (!(f->flag & 1)) { if (phase != PH_HOLD) gval.not_response++; return; }
    if (!b->inflight || f->opaque != b->op) { if (phase != PH_HOLD) gval.opaque_mismatch++; return; }
    if (phase == PH_MEAS) {
        gs.rx_bytes += 4 + (uint64_t)f->total;
        gs.body_bytes += b->blen;
    }
    if (f->code == 0 && b->part + 1 < b->nparts) { /* the next part of a split registration */
        b->part++;
        send_part(b, now);
        return;
    }
    registration_done(b, f, now);
}

/* after setup: each broker's first turn of the steady state */
void brokers_steady(uint64_t now) {
    for (int i = 0; i < n_brokers; i++) {
        broker_t *b = &brokers[i];
        if (cfg.mode == M_ROUTE) /* heartbeats staggered over the period */
            b->next_due = cfg.heartbeat ? now + cfg.heartbeat * (uint64_t)(i + 1) / (uint64_t)n_brokers : UINT64_MAX;
        else if (cfg.interval)
            b->next_due = now + cfg.interval * (uint64_t)i / (uint64_t)n_brokers;
        else if (cfg.sleep_max_ms > 0)
            b->next_due = now + (uint64_t)rnd_below((uint32_t)cfg.sleep_max_ms) * 1000000ull;
        else b->next_due = now;
    }
    reg_next_token = now;
}

/* while holding, a broker whose connection closed connects again when it is next due (as a
 * broker's next registration does); a refused connection waits for the turn after */
static int revive(broker_t *b, uint64_t now) {
    if (!b->c->closed) return 1;
    if (phase != PH_HOLD) return 0;
    conn_t *c = conn_new(K_BROKER, b->gidx, 1, 0);
    if (!c) {
        hold.connect_failed++;
        broker_reschedule(b, now);
        return 0;
    }
    c->br = b;
    b->c = c;
    b->dead = 0;
    b->writing = 0;
    hold.reconnects++;
    return 1;
}

int sched_brokers(uint64_t now, uint64_t *next) {
    int sent = 0;
    if (phase == PH_DRAIN || phase == PH_DONE) return 0;
    for (int i = 0; i < n_brokers; i++) {
        broker_t *b = &brokers[i];
        if ((b->dead && phase != PH_HOLD) || b->inflight) continue;
        if (b->next_due == UINT64_MAX) continue;
        if (b->next_due > now) { if (b->next_due < *next) *next = b->next_due; continue; }
        if (cfg.reg_conc > 0 && reg_inflight_total >= cfg.reg_conc) break;
        if (cfg.reg_rate > 0 && phase != PH_SETUP) {
            if (reg_next_token > now) { if (reg_next_token < *next) *next = reg_next_token; break; }
            uint64_t step = (uint64_t)(1e9 / cfg.reg_rate);
            reg_next_token = (reg_next_token < now ? now : reg_next_token) + step;
        }
        if (!revive(b, now)) continue;
        broker_send(b, now);
        sent++;
    }
    return sent;
}
