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
 * Build: cc -shared -fPIC -O2 -Wall -o build/libclockskew.so clockskew/clockskew.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static const int64_t *offset_ns;

__attribute__((constructor)) static void clockskew_init(void) {
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
