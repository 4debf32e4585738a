/* A C program that knows two of its 2 MiB chunks are hot and says so through hugewise.h. */
#include "hugewise.h"
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
    size_t chunk = 2u << 20, n = 16 * chunk;
    char *p = mmap(0, n + chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    char *a = (char *)(((unsigned long)p + chunk - 1) & ~(chunk - 1));
    memset(a, 1, n);
    if (hugewise_open(0) != 0) return 2;
    printf("%lu\n", (unsigned long)a);
    fflush(stdout);
    for (int i = 0; i < 3000; i++) {
        hugewise_hot(a + 3 * chunk, chunk, 500);
        hugewise_hot(a + 9 * chunk, chunk, 500);
        hugewise_sample(a + 12 * chunk, 1);
        usleep(2000);
    }
    hugewise_close();
    return 0;
}
