/* Allocations in the order the arguments give them, each touched whole at once: `N` mallocs N
 * MiB, `fK` frees the K-th allocation (from 0). At the end it prints, per allocation still
 * alive, the huge KiB of the mapping that holds it (AnonHugePages in /proc/self/smaps), as
 * `huge[K]=KIB`: what the preload library's budget gave it at first fault. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX 32

/* AnonHugePages of every mapping that overlaps [p, p + n), in KiB. */
static long huge_kib(uintptr_t p, size_t n) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int inside = 0;
    long kib = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = lo < p + n && p < hi;
        } else if (inside && strncmp(line, "AnonHugePages:", 14) == 0) {
            kib += strtol(line + 14, NULL, 10);
        }
    }
    fclose(f);
    return kib;
}

int main(int argc, char **argv) {
    char *blocks[MAX] = {0};
    size_t sizes[MAX] = {0};
    int n = 0;
    for (int i = 1; i < argc && n < MAX; i++) {
        if (argv[i][0] == 'f') {
            int k = atoi(argv[i] + 1);
            if (k < 0 || k >= n) return 2;
            free(blocks[k]);
            blocks[k] = NULL;
            continue;
        }
        long v = strtol(argv[i], NULL, 10);
        if (v <= 0) return 2;
        sizes[n] = (size_t)v << 20;
        blocks[n] = malloc(sizes[n]);
        if (!blocks[n]) return 1;
        memset(blocks[n], 1, sizes[n]);
        n++;
    }
    for (int k = 0; k < n; k++) {
        if (blocks[k]) printf("huge[%d]=%ld\n", k, huge_kib((uintptr_t)blocks[k], sizes[k]));
    }
    return 0;
}
