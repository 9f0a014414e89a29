/* State shared by the event loop's parts: conn.c, brokers.c, load.c. */
#ifndef RMQLOAD_LOAD_H
#define RMQLOAD_LOAD_H
#include "rmqload.h"

#include <sys/epoll.h>

enum { K_ROUTE = 1, K_BROKER = 2 };
typedef struct conn {
    int fd, kind, idx, closed, want_out;
    uint8_t *ib;
    size_t icap, ilen;
    /* route */
    uint8_t *ob;
    size_t ocap, olen, ooff;
    int depth, inflight, sbits;
    uint32_t seq;
    int32_t *sl_op;
    uint64_t *sl_t;
    uint8_t *sl_used;
    int *freestk, nfree;
    struct broker *br;
} conn_t;

enum { PH_SETUP, PH_WARM, PH_MEAS, PH_DRAIN, PH_HOLD, PH_DONE };
extern int phase;
extern sstats_t rs, gs, ss; /* route / register stats of the window, setup registrations */
extern val_t rval, gval;    /* whole-run validation counters (hold excluded) */
extern hold_t hold;
extern int reg_inflight_total;
extern uint64_t reg_setup_resp;

/* conn.c */
conn_t *conn_new(int kind, int idx, int depth, int fatal);
void conn_close(conn_t *c, const char *why);
void ep_set(conn_t *c, int out);
void handle_read(conn_t *c);
void loop_init(void);
int loop_wait(struct epoll_event *evs, int max, int timeout_ms);

/* brokers.c */
void broker_frame(conn_t *c, const frame_t *f, uint64_t now);
void broker_flush(broker_t *b);
void broker_reschedule(broker_t *b, uint64_t now);
int sched_brokers(uint64_t now, uint64_t *next);
void brokers_connect(void);
void brokers_steady(uint64_t now);

/* load.c */
void route_frame(conn_t *c, const frame_t *f, const uint8_t *raw, uint64_t now);
void route_fill(conn_t *c, uint64_t now);
void conn_flush_route(conn_t *c);

#endif
