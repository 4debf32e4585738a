/* hugewise.h: tell the hugewise promotion daemon which memory this program touches.
 *
 * Link with -lhugewise_capi. Call hugewise_open once, then hugewise_sample for accesses you
 * sample (every Nth load or store of a hot loop, say) or hugewise_hot for ranges you know are
 * hot. `hugewise promote --pid <this pid> --policy pcc --budget 2%` then promotes the chunks
 * the samples point at. Every call is cheap and never fails the program: when the channel
 * cannot be opened the calls do nothing.
 */
#ifndef HUGEWISE_H
#define HUGEWISE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Open this process's sample channel (/dev/shm/hugewise-samples.<pid>) with room for `slots`
 * samples (0: a default of 1 Mi). Returns 0, or -1 when it could not be created. */
int hugewise_open(size_t slots);

/* Record one access at `addr`; `write` is non-zero for a store. The pcc policy counts an
 * access as a page walk only when it falls on another 4 KiB page than the last one recorded
 * in its 2 MiB chunk: sample accesses as they come, not one address over and over. */
void hugewise_sample(const void *addr, int write);

/* Record `weight` accesses spread over the range [start, start + len). */
void hugewise_hot(const void *start, size_t len, unsigned weight);

/* One sample in how many the daemon asks for, of those the program would publish (1: all).
 * A daemon whose budget sits still asks for fewer, so that sampling costs the program little
 * once nothing changes: a program that samples every Nth access should sample every
 * N * hugewise_thinning()-th. Read it now and then (once per batch of work), not at every
 * access. 1 when the channel is not open. */
unsigned hugewise_thinning(void);

/* Close the channel and remove its file. */
void hugewise_close(void);

#ifdef __cplusplus
}
#endif

#endif
