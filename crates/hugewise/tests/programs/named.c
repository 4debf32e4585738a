/* Allocations named through hugewise_exec.h: the same output with and without hugewise exec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugewise_exec.h"

int main(void) {
    HUGEWISE_EXEC_NAME("hot.vertices");
    unsigned char *hot = malloc(8u << 20);
    HUGEWISE_EXEC_NAME(NULL);
    unsigned char *cold = malloc(8u << 20);
    memset(hot, 1, 8u << 20);
    memset(cold, 2, 8u << 20);
    unsigned long sum = 0;
    for (size_t i = 0; i < (8u << 20); i += 4096) sum += hot[i] + cold[i];
    printf("%lu\n", sum);
    free(hot);
    free(cold);
    return 0;
}
