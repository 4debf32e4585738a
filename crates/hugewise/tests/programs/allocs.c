/* Every allocation entry point a program can call, large and small, from several threads and
 * across a fork: run with and without hugewise's preload library, it must print the same. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t sum(const unsigned char *p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += 97) s = s * 31 + p[i];
    return s;
}

static int fail(const char *what) {
    printf("FAIL %s\n", what);
    return 1;
}

static void *worker(void *arg) {
    uintptr_t id = (uintptr_t)arg;
    uint64_t s = 0;
    for (int round = 0; round < 200; round++) {
        size_t n = ((size_t)(round % 7) + 1) << 20; /* 1..7 MiB */
        unsigned char *p = malloc(n);
        if (!p) return (void *)1;
        memset(p, (int)(id + round), n);
        s += sum(p, n);
        p = realloc(p, n + (n >> 1));
        if (!p) return (void *)1;
        s += sum(p, n);
        free(p);
        char *small = malloc(100 + round);
        free(small);
    }
    return (void *)(uintptr_t)(s % 1000003 + 2);
}

int main(void) {
    int bad = 0;
    /* calloc of a large block reads as zeros. */
    unsigned char *z = calloc(3, 1 << 20);
    for (size_t i = 0; i < (3u << 20); i += 4096) bad |= z[i];
    if (bad) return fail("calloc not zero");
    /* A block freed and handed out again by calloc is cleared again. */
    unsigned char *dirty = malloc(3u << 20);
    memset(dirty, 0xff, 3u << 20);
    free(dirty);
    unsigned char *clean = calloc(1, (3u << 20) - 4096);
    for (size_t i = 0; i < (3u << 20) - 4096; i += 512) bad |= clean[i];
    if (bad) return fail("calloc after free not zero");
    free(clean);
    /* Alignment of every aligned entry point. */
    void *a = NULL;
    if (posix_memalign(&a, 1 << 16, 5 << 20) != 0 || ((uintptr_t)a & 0xffff)) return fail("posix_memalign");
    void *b = aligned_alloc(4096, 4 << 20);
    void *c = memalign(1 << 21, 6 << 20);
    void *d = valloc(3 << 20);
    if (((uintptr_t)b & 4095) || ((uintptr_t)c & ((1 << 21) - 1)) || ((uintptr_t)d & 4095))
        return fail("alignment");
    void *odd = NULL;
    if (posix_memalign(&odd, 3, 10 << 20) != EINVAL) return fail("posix_memalign accepted alignment 3");
    memset(a, 1, 5 << 20);
    memset(b, 2, 4 << 20);
    memset(c, 3, 6 << 20);
    memset(d, 4, 3 << 20);
    if (malloc_usable_size(b) < (4u << 20)) return fail("usable size");
    /* realloc keeps the data, growing and shrinking, across the size threshold both ways. */
    unsigned char *r = malloc(100);
    for (int i = 0; i < 100; i++) r[i] = (unsigned char)i;
    r = realloc(r, 8 << 20);
    for (int i = 0; i < 100; i++) bad |= r[i] != (unsigned char)i;
    memset(r + 100, 9, (8 << 20) - 100);
    r = realloc(r, 50);
    for (int i = 0; i < 50; i++) bad |= r[i] != (unsigned char)i;
    if (bad) return fail("realloc lost data");
    printf("sums %llu %llu %llu %llu\n", (unsigned long long)sum(a, 5 << 20),
           (unsigned long long)sum(b, 4 << 20), (unsigned long long)sum(c, 6 << 20),
           (unsigned long long)sum(d, 3 << 20));
    /* Mappings the program makes itself: trimmed, moved by mremap, unmapped. */
    size_t m = 8u << 20;
    unsigned char *map = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return fail("mmap");
    memset(map, 6, m);
    if (munmap(map, 2u << 20) != 0) return fail("munmap head");
    unsigned char *moved = mremap(map + (2u << 20), m - (2u << 20), 16u << 20, MREMAP_MAYMOVE);
    if (moved == MAP_FAILED) return fail("mremap");
    memset(moved + (6u << 20), 7, 10u << 20);
    printf("mapped %llu\n", (unsigned long long)sum(moved, 16u << 20));
    if (munmap(moved, 16u << 20) != 0) return fail("munmap");
    if (munmap(NULL, 4096) == 0) {} /* an empty range is no error either way */
    void *refused = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, -1, 0);
    if (refused != MAP_FAILED || errno != EBADF) return fail("mmap of a bad fd must fail with EBADF");
    /* Threads allocate and free at once. */
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) {
        void *res;
        pthread_join(t[i], &res);
        printf("thread %d %lu\n", i, (unsigned long)(uintptr_t)res);
    }
    /* A child frees its copies of the parent's blocks and makes its own. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        free(a);
        unsigned char *e = malloc(16 << 20);
        memset(e, 5, 16 << 20);
        printf("child %llu\n", (unsigned long long)sum(e, 16 << 20));
        free(e);
        free(c);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child status %d, parent still has %d\n", status, ((unsigned char *)a)[12345]);
    free(a);
    free(b);
    free(c);
    free(d);
    free(r);
    free(z);
    free(NULL);
    return 0;
}
