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
 * in its 2 MiB chunk: sample accesses as they come, not one address over and over. While the
 * daemon's budget sits still it asks for fewer samples, and this call then publishes one in
 * so many of its calls (counted per thread), each standing for that many. */
void hugewise_sample(const void *addr, int write);

/* Record `weight` accesses spread over the range [start, start + len). */
void hugewise_hot(const void *start, size_t len, unsigned weight);

/* Close the channel and remove its file. */
void hugewise_close(void);

#ifdef __cplusplus
}
#endif

#endif
