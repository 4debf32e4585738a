//! A thread's reusable list of vertex ids: what a parallel step collects before it appends
//! them to a shared queue, kept from step to step so that a step allocates nothing.
//!
//! Why not a fresh `Vec` a piece: glibc's malloc caches a small block freed by a thread in
//! that thread's own cache, whichever arena the block came from, and a vector later grown
//! from such a block takes that other arena's lock at each `realloc`. Brandes' search on the
//! road mesh grows thousands of short lists a second on both workers; once blocks had crossed
//! between the threads (after one trial or several, never the first) each worker waited on
//! the other's arena about 11,000 times a second, and the trials from then on took twice as
//! long (0.95 s became 2.0 s), in most runs until the process ended.

use std::cell::Cell;

/// The most entries a kept list may have room for (256 KiB): the lists that cross often are
/// a mesh's, of a few dozen entries; a list grown for one of kron:26's levels (millions) is
/// freed rather than held by the thread for as long as it lives, outside every region.
const KEEP_AT_MOST: usize = 1 << 16;

thread_local! {
    static FOUND: Cell<Vec<u32>> = const { Cell::new(Vec::new()) };
}

/// This thread's list, empty, with the capacity it has grown to; [`give_back`] returns it.
pub(crate) fn take() -> Vec<u32> {
    FOUND.take()
}

/// Return `list` to this thread, emptied, for its next [`take`]; of the list given and one
/// already there (a nested take), the larger is kept, and neither past [`KEEP_AT_MOST`].
///
/// Give it back on the thread that took it, with no call into the pool between: the point is
/// that the block is freed and grown by one thread only.
pub(crate) fn give_back(mut list: Vec<u32>) {
    if list.capacity() > KEEP_AT_MOST {
        return;
    }
    list.clear();
    FOUND.with(|kept| {
        let old = kept.take();
        kept.set(if old.capacity() >= list.capacity() {
            old
        } else {
            list
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_given_back_is_taken_again_with_its_room_and_no_entries() {
        let mut a = take();
        a.extend(0..1000);
        let (at, room) = (a.as_ptr(), a.capacity());
        give_back(a);
        let b = take();
        assert!(b.is_empty());
        assert_eq!(
            (b.as_ptr(), b.capacity()),
            (at, room),
            "the same block again"
        );
        // Taken twice without a give back between: the second is a new, empty list; the larger
        // of the two given back is the one kept.
        let c = take();
        assert_eq!(c.capacity(), 0);
        give_back(c);
        give_back(b);
        assert_eq!(take().capacity(), room);
    }

    #[test]
    fn a_list_past_the_bound_is_freed_not_kept() {
        let mut big = take();
        big.reserve_exact(KEEP_AT_MOST + 1);
        give_back(big);
        assert_eq!(take().capacity(), 0);
        let mut at_bound = Vec::with_capacity(KEEP_AT_MOST);
        at_bound.push(1);
        give_back(at_bound);
        assert_eq!(take().capacity(), KEEP_AT_MOST);
    }

    #[test]
    fn each_thread_keeps_its_own_list() {
        let mut a = take();
        a.extend(0..100);
        let at = a.as_ptr();
        give_back(a);
        let other = std::thread::spawn(|| take().capacity())
            .join()
            .expect("thread");
        assert_eq!(other, 0, "another thread's take is its own");
        let again = take();
        assert_eq!(again.as_ptr(), at);
    }
}
