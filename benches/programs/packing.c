/* Small hot records scattered among cold ones, as a heap looks once a program has made both
 * from different call sites in turn: the workload of `hugewise bench packing` and of the
 * profile tests. Makes N hot records (32 bytes, one call site) and N cold ones (480 bytes,
 * another), interleaved, links the hot ones into one random cycle, then follows it.
 * Prints time_s=SECONDS for the chase alone (setup apart) and a checksum that does not depend
 * on where the records are.
 *
 * usage: packing [N] [hops] [seed]        (defaults: 1000000 records, 10000000 hops, 1)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct hot {
    struct hot *next;
    uint64_t value;
    uint64_t pad[2];
};

struct cold {
    uint64_t words[60];
};

static uint64_t rng = 1;

static uint64_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Each record comes from a call site of its own: the profile tells them apart by it. */
__attribute__((noinline)) static struct hot *make_hot(uint64_t i) {
    struct hot *h = malloc(sizeof *h);
    if (h) {
        h->next = NULL;
        h->value = i * 2654435761u;
    }
    return h;
}

__attribute__((noinline)) static struct cold *make_cold(uint64_t i) {
    struct cold *c = malloc(sizeof *c);
    if (c) {
        c->words[0] = i;
    }
    return c;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    uint64_t hops = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000;
    rng = argc > 3 ? strtoull(argv[3], NULL, 10) | 1 : 1;
    if (n < 2) {
        fprintf(stderr, "packing: N must be at least 2\n");
        return 2;
    }
    struct hot **hot = malloc(n * sizeof *hot);
    struct cold **cold = malloc(n * sizeof *cold);
    if (!hot || !cold) {
        fprintf(stderr, "packing: out of memory\n");
        return 1;
    }
    for (uint64_t i = 0; i < n; i++) {
        hot[i] = make_hot(i);
        cold[i] = make_cold(i);
        if (!hot[i] || !cold[i]) {
            fprintf(stderr, "packing: out of memory at record %llu\n", (unsigned long long)i);
            return 1;
        }
    }
    /* A random cyclic order of the hot records (Sattolo's shuffle keeps it one cycle). */
    for (uint64_t i = n - 1; i > 0; i--) {
        uint64_t j = next_random() % i;
        struct hot *t = hot[i];
        hot[i] = hot[j];
        hot[j] = t;
    }
    for (uint64_t i = 0; i < n; i++) {
        hot[i]->next = hot[(i + 1) % n];
    }
    struct hot *p = hot[0];
    free(hot);
    uint64_t sum = 0;
    /* A tenth of the chase first, untimed: the pages are faulted and the caches warm. */
    for (uint64_t i = 0; i < hops / 10; i++) {
        sum += p->value;
        p = p->next;
    }
    double t = now_s();
    for (uint64_t i = 0; i < hops; i++) {
        sum += p->value;
        p = p->next;
    }
    printf("time_s=%.6f\n", now_s() - t);
    printf("checksum=%llu\n", (unsigned long long)sum);
    for (uint64_t i = 0; i < n; i++) {
        free(cold[i]);
    }
    free(cold);
    return 0;
}
