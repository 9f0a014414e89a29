/*
 * LD_PRELOAD library for the RocketMQ peers run by pynamesrv: a bind() to the wildcard
 * address (0.0.0.0 or ::) binds to loopback instead (127.0.0.1, or ::ffff:127.0.0.1 for
 * a dual-stack socket), so every port a Java NameServer, broker or proxy opens is
 * reachable from this machine only, whatever its own configuration says.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static const unsigned char V4_MAPPED_LOOPBACK[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                                     0, 0, 0xff, 0xff, 127, 0, 0, 1};

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real_bind;
    if (real_bind == NULL) {
        real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    }
    if (addr != NULL && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in v4;
        memcpy(&v4, addr, sizeof v4);
        if (v4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&v4, sizeof v4);
        }
    } else if (addr != NULL && addr->sa_family == AF_INET6 &&
               len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 v6;
        memcpy(&v6, addr, sizeof v6);
        if (memcmp(&v6.sin6_addr, &in6addr_any, sizeof v6.sin6_addr) == 0) {
            memcpy(&v6.sin6_addr, V4_MAPPED_LOOPBACK, sizeof V4_MAPPED_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&v6, sizeof v6);
        }
    }
    return real_bind(fd, addr, len);
}
