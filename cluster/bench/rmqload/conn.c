/* Connections: connect, epoll registration, close, reading and splitting replies. */
#include "load.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int epfd;

void loop_init(void) {
    epfd = epoll_create1(0);
    if (epfd < 0) die("epoll_create1: %s", strerror(errno));
}

int loop_wait(struct epoll_event *evs, int max, int timeout_ms) {
    int ne = epoll_wait(epfd, evs, max, timeout_ms);
    if (ne < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
    return ne < 0 ? 0 : ne;
}

/* a connected non-blocking socket, or -1 (or exit, if fatal) when the server refuses */
static int connect_to(int fatal) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket: %s", strerror(errno));
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)cfg.port);
    if (inet_pton(AF_INET, cfg.host, &sa.sin_addr) != 1) die("bad address %s", cfg.host);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (fatal) die("connect %s:%d: %s", cfg.host, cfg.port, strerror(errno));
        close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

void ep_set(conn_t *c, int out) {
    struct epoll_event ev;
    ev.events = EPOLLIN | (out ? EPOLLOUT : 0);
    ev.data.ptr = c;
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl: %s", strerror(errno));
    c->want_out = out;
}

/* a new connection (NULL if not fatal and the server refuses it) */
conn_t *conn_new(int kind, int idx, int depth, int fatal) {
    int fd = connect_to(fatal);
    if (fd < 0) return NULL;
    conn_t *c = xcalloc(1, sizeof *c);
    c->fd = fd;
    c->kind = kind;
    c->idx = idx;
    c->icap = kind == K_ROUTE ? 65536 : 4096;
    c->ib = xmalloc(c->icap);
    if (kind == K_ROUTE) {
        c->depth = depth;
        int sb = 0;
        while ((1 << sb) < depth) sb++;
        c->sbits = sb;
        c->sl_op = xcalloc((size_t)depth, sizeof(int32_t));
        c->sl_t = xcalloc((size_t)depth, sizeof(uint64_t));
        c->sl_used = xcalloc((size_t)depth, 1);
        c->freestk = xmalloc(sizeof(int) * (size_t)depth);
        for (int i = 0; i < depth; i++) c->freestk[i] = depth - 1 - i;
        c->nfree = depth;
        c->ocap = (size_t)depth * 256 + 4096;
        c->ob = xmalloc(c->ocap);
    }
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl add: %s", strerror(errno));
    return c;
}

/* close; a broker's connection closed while holding is expected (the server restarts) */
void conn_close(conn_t *c, const char *why) {
    if (c->closed) return;
    c->closed = 1;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (phase == PH_HOLD) {
        hold.conn_lost++;
        if (c->br && c->br->inflight) { c->br->inflight = 0; reg_inflight_total--; }
        return;
    }
    if (phase < PH_DRAIN || why) {
        val_t *v = c->kind == K_ROUTE ? &rval : &gval;
        v->conn_closed++;
        if (!cfg.quiet)
            fprintf(stderr, "rmqload: %s connection %d closed: %s\n", c->kind == K_ROUTE ? "route" : "broker", c->idx,
                    why ? why : "by peer");
    }
    if (c->kind == K_ROUTE) {
        rval.lost += (uint64_t)c->inflight;
        c->inflight = 0;
    } else if (c->br) {
        if (c->br->inflight) { gval.lost++; c->br->inflight = 0; reg_inflight_total--; }
        c->br->dead = 1;
    }
}

static int fill_buffer(conn_t *c) { /* 0: go on, -1: closed */
    for (;;) {
        if (c->icap - c->ilen < 16384) {
            c->icap *= 2;
            c->ib = xrealloc(c->ib, c->icap);
        }
        ssize_t r = read(c->fd, c->ib + c->ilen, c->icap - c->ilen);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return 0;
            conn_close(c, strerror(errno));
            return -1;
        }
        if (r == 0) { conn_close(c, NULL); return -1; }
        c->ilen += (size_t)r;
        if (c->ilen < c->icap) return 0; /* short read: socket drained */
    }
}

void handle_read(conn_t *c) {
    if (fill_buffer(c)) return;
    uint64_t now = now_ns();
    size_t pos = 0;
    val_t *v = c->kind == K_ROUTE ? &rval : &gval;
    for (;;) {
        frame_t f;
        size_t used = 0;
        int rc = decode_frame(c->ib + pos, c->ilen - pos, &f, &used);
        if (rc == 0) {
            if (c->ilen - pos >= 4) { /* make room for a large frame */
                size_t need = 4 + (size_t)get_be32(c->ib + pos);
                if (need > c->icap) { c->icap = need + 16384; c->ib = xrealloc(c->ib, c->icap); }
            }
            break;
        }
        if (rc == -1) {
            v->proto_err++;
            conn_close(c, "protocol error (bad frame length / header length)");
            return;
        }
        if (rc == -2) {
            v->parse_err++;
            v->frames++;
        } else if (c->kind == K_ROUTE) route_frame(c, &f, c->ib + pos, now);
        else broker_frame(c, &f, now);
        pos += used;
    }
    if (pos) {
        memmove(c->ib, c->ib + pos, c->ilen - pos);
        c->ilen -= pos;
    }
    if (c->kind == K_ROUTE) route_fill(c, now);
}
