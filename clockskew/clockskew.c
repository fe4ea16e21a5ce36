/*
 * clockskew: an LD_PRELOAD library that offsets a process's wall clock.
 *
 * It overrides clock_gettime (CLOCK_REALTIME and CLOCK_REALTIME_COARSE only;
 * every other clock passes through untouched), gettimeofday and time, adding
 * a signed nanosecond offset. The offset is the int64 (host byte order) at
 * offset 0 of the file named by the environment variable
 * JEPSEN_LITE_CLOCK_FILE. The file is memory-mapped once at load time; the
 * harness rewrites those 8 bytes in place while the process runs, and every
 * later clock read sees the new offset. The file is never truncated. When the
 * variable is unset or the file is missing or shorter than 8 bytes, the
 * offset is 0.
 *
 * The real clock_gettime is found with dlsym(RTLD_NEXT, ...) in a load-time
 * constructor; calls that arrive before it ran (for instance from an
 * allocator initialising itself) use the system call directly, so the
 * library never allocates or takes a lock on the clock path.
 *
 * It also redirects outgoing TCP connections, for servers that dial a peer
 * at an address the peer announces itself (ZooKeeper's leader election does)
 * rather than at the address configured for it: the environment variable
 * JEPSEN_LITE_CONNECT_MAP holds comma-separated "ip:port=ip:port" pairs
 * (IPv4; also matched as IPv4-mapped IPv6), and connect() to the left address
 * goes to the right one instead (the harness's proxy for that link). Other
 * connections pass through untouched.
 *
 * Build: cc -shared -fPIC -O2 -Wall -o build/libclockskew.so clockskew/clockskew.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static clock_gettime_fn real_clock_gettime;
static const int64_t *offset_ns;

/* A connect() redirection; addresses and ports in network byte order. */
struct redirect {
    uint32_t from_addr, to_addr;
    uint16_t from_port, to_port;
};

#define MAX_REDIRECTS 64
static struct redirect redirects[MAX_REDIRECTS];
static int redirect_count;
static connect_fn real_connect;

static int parse_endpoint(const char *s, uint32_t *addr, uint16_t *port) {
    unsigned a, b, c, d, p;
    if (sscanf(s, "%u.%u.%u.%u:%u", &a, &b, &c, &d, &p) != 5 || a > 255 || b > 255 || c > 255 ||
        d > 255 || p > 65535) {
        return -1;
    }
    *addr = htonl((a << 24) | (b << 16) | (c << 8) | d);
    *port = htons((uint16_t)p);
    return 0;
}

static void parse_redirects(const char *spec) {
    while (spec != NULL && *spec != '\0' && redirect_count < MAX_REDIRECTS) {
        const char *eq = strchr(spec, '=');
        if (eq == NULL) {
            return;
        }
        struct redirect r;
        if (parse_endpoint(spec, &r.from_addr, &r.from_port) == 0 &&
            parse_endpoint(eq + 1, &r.to_addr, &r.to_port) == 0) {
            redirects[redirect_count++] = r;
        }
        spec = strchr(eq, ',');
        if (spec != NULL) {
            spec++;
        }
    }
}

__attribute__((constructor)) static void clockskew_init(void) {
    real_connect = (connect_fn)dlsym(RTLD_NEXT, "connect");
    parse_redirects(getenv("JEPSEN_LITE_CONNECT_MAP"));
    clock_gettime_fn fn = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    const char *path = getenv("JEPSEN_LITE_CLOCK_FILE");
    if (path != NULL && *path != '\0') {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            struct stat st;
            if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(int64_t)) {
                void *p = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
                if (p != MAP_FAILED) {
                    __atomic_store_n(&offset_ns, (const int64_t *)p, __ATOMIC_RELEASE);
                }
            }
            close(fd);
        }
    }
    __atomic_store_n(&real_clock_gettime, fn, __ATOMIC_RELEASE);
}

static int64_t current_offset(void) {
    const int64_t *p = __atomic_load_n(&offset_ns, __ATOMIC_ACQUIRE);
    return p == NULL ? 0 : __atomic_load_n(p, __ATOMIC_RELAXED);
}

static int true_clock_gettime(clockid_t clk, struct timespec *ts) {
    clock_gettime_fn fn = __atomic_load_n(&real_clock_gettime, __ATOMIC_ACQUIRE);
    if (fn != NULL) {
        return fn(clk, ts);
    }
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void add_offset(struct timespec *ts, int64_t off) {
    int64_t ns = (int64_t)ts->tv_nsec + off % 1000000000LL;
    int64_t sec = (int64_t)ts->tv_sec + off / 1000000000LL;
    if (ns >= 1000000000LL) {
        ns -= 1000000000LL;
        sec++;
    } else if (ns < 0) {
        ns += 1000000000LL;
        sec--;
    }
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = (long)ns;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int rc = true_clock_gettime(clk, ts);
    if (rc == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) {
        int64_t off = current_offset();
        if (off != 0) {
            add_offset(ts, off);
        }
    }
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    if (tz != NULL) {
        struct timezone *z = tz;
        z->tz_minuteswest = 0;
        z->tz_dsttime = 0;
    }
    struct timeval *out = tv;
    __asm__("" : "+r"(out)); /* glibc declares tv nonnull; callers still pass NULL */
    if (out == NULL) {
        return 0;
    }
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc != 0) {
        return rc;
    }
    out->tv_sec = ts.tv_sec;
    out->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
        return (time_t)-1;
    }
    if (out != NULL) {
        *out = ts.tv_sec;
    }
    return ts.tv_sec;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len) {
    connect_fn fn = real_connect;
    if (fn == NULL) {
        fn = (connect_fn)dlsym(RTLD_NEXT, "connect");
    }
    if (sa != NULL && redirect_count > 0) {
        if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
            struct sockaddr_in in;
            memcpy(&in, sa, sizeof in);
            for (int i = 0; i < redirect_count; i++) {
                if (in.sin_addr.s_addr == redirects[i].from_addr && in.sin_port == redirects[i].from_port) {
                    in.sin_addr.s_addr = redirects[i].to_addr;
                    in.sin_port = redirects[i].to_port;
                    return fn(fd, (const struct sockaddr *)&in, sizeof in);
                }
            }
        } else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
            struct sockaddr_in6 in6;
            memcpy(&in6, sa, sizeof in6);
            if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
                uint32_t v4;
                memcpy(&v4, &in6.sin6_addr.s6_addr[12], 4);
                for (int i = 0; i < redirect_count; i++) {
                    if (v4 == redirects[i].from_addr && in6.sin6_port == redirects[i].from_port) {
                        memcpy(&in6.sin6_addr.s6_addr[12], &redirects[i].to_addr, 4);
                        in6.sin6_port = redirects[i].to_port;
                        return fn(fd, (const struct sockaddr *)&in6, sizeof in6);
                    }
                }
            }
        }
    }
    return fn(fd, sa, len);
}
