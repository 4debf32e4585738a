/* hugewise_exec.h: name a program's allocations for `hugewise exec` page rules.
 *
 * Under `hugewise exec --pages 'name:NAME=POLICY,...'`, allocations a thread makes after
 * HUGEWISE_EXEC_NAME("NAME") get that rule's page policy (thp, base or system), whatever their
 * size, as long as they are at least --min-size. Without hugewise exec the calls do nothing:
 * the function is a weak symbol that only the preload library defines, so a program built with
 * this header runs unchanged everywhere. Names: 1 to 31 letters, digits, '_', '-' or '.'.
 *
 *   HUGEWISE_EXEC_NAME("vertices");
 *   double *rank = malloc(n * sizeof *rank);    // gets the rule name:vertices=...
 *   HUGEWISE_EXEC_NAME(NULL);                   // later allocations are unnamed again
 */
#ifndef HUGEWISE_EXEC_H
#define HUGEWISE_EXEC_H

#ifdef __cplusplus
extern "C" {
#endif

/* Name this thread's next allocations (NULL: stop naming them). */
void hugewise_exec_name(const char *name) __attribute__((weak));

#define HUGEWISE_EXEC_NAME(name)          \
    do {                                  \
        if (hugewise_exec_name)           \
            hugewise_exec_name(name);     \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
