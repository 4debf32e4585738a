/* Random 8-byte reads over one large malloc'd buffer, as an unmodified program does them: the
 * workload of `hugewise promote -- CMD` in BENCHMARKS.md (never slower than the program alone,
 * and near THP at fault with --budget 100%). It knows nothing of hugewise.
 *
 * usage: randread MIB MILLION_READS [SEED]
 *
 * Prints buf=ADDRESS and bytes=N (the buffer), huge_kib=N (the process's AnonHugePages right
 * after the buffer was first touched: what it got at fault, before anyone collapsed anything),
 * time_s=SECONDS for the reads alone, run_s=SECONDS from its start to its end, and a checksum. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long anon_huge_kib(void) {
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "AnonHugePages:", 14) == 0) {
            kib = strtol(line + 14, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kib;
}

/* Seconds since `since` (0: since the clock's origin). */
static double seconds(double since) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9 - since;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MIB MILLION_READS [SEED]\n", argv[0]);
        return 2;
    }
    double start = seconds(0);
    size_t bytes = (size_t)strtoull(argv[1], NULL, 10) << 20;
    uint64_t reads = strtoull(argv[2], NULL, 10) * 1000000ull;
    uint64_t x = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    size_t words = bytes / 8;
    if (words == 0) return 2;
    uint64_t *buf = malloc(bytes);
    if (!buf) {
        perror("malloc");
        return 1;
    }
    for (size_t i = 0; i < words; i += 512) buf[i] = i;
    printf("buf=%p\nbytes=%zu\nhuge_kib=%ld\n", (void *)buf, bytes, anon_huge_kib());
    fflush(stdout);
    x = x * 0x9e3779b97f4a7c15ull | 1;
    uint64_t sum = 0;
    double t = seconds(0);
    /* Independent reads from a xorshift stream; the sum keeps them from being optimised out. */
    for (uint64_t r = 0; r < reads; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        sum += buf[x % words];
    }
    printf("time_s=%.6f\nchecksum=%llu\n", seconds(t), (unsigned long long)sum);
    free(buf);
    printf("run_s=%.6f\n", seconds(start));
    return 0;
}
