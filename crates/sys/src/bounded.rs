//! Index lists checked once against a bound, so that reading an array at every index of the
//! list needs no bounds check per read: a graph kernel's gather over an adjacency list (one
//! compare and branch an arc, a third of PageRank's instructions an arc on a sparse graph).

/// A list of indices all below `bound`, checked when made.
#[derive(Debug, Clone, Copy)]
pub struct Below<'a> {
    indices: &'a [u32],
    bound: usize,
}

impl<'a> Below<'a> {
    /// `indices`, if every one is below `bound`.
    pub fn new(indices: &'a [u32], bound: usize) -> Option<Below<'a>> {
        // Every index fits a u32, so a bound past u32::MAX holds them all.
        let Ok(bound32) = u32::try_from(bound) else {
            return Some(Below { indices, bound });
        };
        // A fold of compares without an early exit, which vectorizes: about an instruction an
        // index.
        let over = indices
            .iter()
            .fold(0u32, |over, &i| over | u32::from(i >= bound32));
        (over == 0).then_some(Below { indices, bound })
    }

    /// The indices.
    pub fn indices(&self) -> &'a [u32] {
        self.indices
    }

    /// Each index with the element of `values` it names, or `None` when `values` is shorter
    /// than the bound.
    pub fn pairs<'v, T>(&self, values: &'v [T]) -> Option<Pairs<'a, 'v, T>> {
        (values.len() >= self.bound).then_some(Pairs {
            indices: self.indices,
            values,
        })
    }
}

/// The indices of a [`Below`], each with the element it names.
#[derive(Debug)]
pub struct Pairs<'a, 'v, T> {
    /// Every index is below `values.len()`.
    indices: &'a [u32],
    values: &'v [T],
}

impl<'a, 'v, T> Pairs<'a, 'v, T> {
    /// The element `index` names, which must be one of the indices this `Pairs` was made
    /// with (all below `values.len()`), whether or not split off since.
    #[inline(always)]
    fn at(&self, index: &'a u32) -> (&'a u32, &'v T) {
        // SAFETY: `index` is an element of `indices`, all of which `Below::new` found below its
        // bound, which `Below::pairs` found no longer than `values`; `indices` is a shared borrow
        // of plain integers, so nothing changed them since.
        (index, unsafe { self.values.get_unchecked(*index as usize) })
    }

    /// The first `k` pairs, split off the front.
    ///
    /// # Panics
    /// When fewer than `k` are left.
    #[inline(always)]
    pub fn split_front(&mut self, k: usize) -> Pairs<'a, 'v, T> {
        let (front, rest) = self.indices.split_at(k);
        self.indices = rest;
        Pairs {
            indices: front,
            values: self.values,
        }
    }

    /// The next `N` pairs, when there are that many left.
    #[inline(always)]
    pub fn next_group<const N: usize>(&mut self) -> Option<[(&'a u32, &'v T); N]> {
        let (group, rest) = self.indices.split_first_chunk::<N>()?;
        self.indices = rest;
        Some(group.each_ref().map(|i| self.at(i)))
    }

    /// The next `N` pairs, of which the first `k` are split off the front and the rest stay
    /// in the list: a short list read as a window of fixed length, whose pairs past `k` the
    /// caller masks, so that the list's length decides no branch. `None` when fewer than `N`
    /// are left.
    ///
    /// # Panics
    /// When `k` is more than `N`, whether or not `N` are left.
    #[inline(always)]
    pub fn split_front_in<const N: usize>(&mut self, k: usize) -> Option<[(&'a u32, &'v T); N]> {
        assert!(k <= N, "a front of {k} split from a window of {N}");
        let window = self.indices.first_chunk::<N>()?;
        self.indices = &self.indices[k..];
        Some(window.each_ref().map(|i| self.at(i)))
    }

    /// How many pairs are left.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether none are left.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

impl<'a, 'v, T> Iterator for Pairs<'a, 'v, T> {
    type Item = (&'a u32, &'v T);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let (first, rest) = self.indices.split_first()?;
        self.indices = rest;
        Some(self.at(first))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.indices.len(), Some(self.indices.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::Below;

    #[test]
    fn an_index_at_or_past_the_bound_is_refused() {
        assert!(Below::new(&[0, 4, 2], 5).is_some());
        assert!(Below::new(&[0, 5, 2], 5).is_none());
        assert!(Below::new(&[u32::MAX], 5).is_none());
        assert!(Below::new(&[], 0).is_some());
    }

    #[test]
    fn pairs_need_values_as_long_as_the_bound() {
        let list = Below::new(&[3, 1], 4).expect("below 4");
        assert!(list.pairs(&[0u8; 3]).is_none());
        let values = [10, 11, 12, 13, 14];
        let picked: Vec<_> = list
            .pairs(&values)
            .expect("long enough")
            .map(|(i, v)| (*i, *v))
            .collect();
        assert_eq!(picked, [(3, 13), (1, 11)]);
    }

    #[test]
    fn groups_and_fronts_split_the_list_in_order() {
        let indices: Vec<u32> = (0..11).rev().collect();
        let values: Vec<u32> = (0..11).map(|i| i * 100).collect();
        let list = Below::new(&indices, 11).expect("below 11");
        let mut pairs = list.pairs(&values).expect("long enough");
        let mut front = pairs.split_front(6);
        assert_eq!((front.len(), pairs.len()), (6, 5));
        let group = front.next_group::<4>().expect("four of six");
        assert_eq!(group.map(|(i, v)| (*i, *v))[3], (7, 700));
        assert!(front.next_group::<4>().is_none());
        let rest: Vec<u32> = front.chain(pairs).map(|(_, v)| *v).collect();
        assert_eq!(rest, [600, 500, 400, 300, 200, 100, 0]);
    }

    #[test]
    fn a_window_splits_only_its_front_and_needs_its_whole_length() {
        let indices = [4u32, 3, 2, 1, 0];
        let values = [10, 11, 12, 13, 14];
        let list = Below::new(&indices, 5).expect("below 5");
        let mut pairs = list.pairs(&values).expect("long enough");
        let window = pairs.split_front_in::<4>(1).expect("four of five");
        assert_eq!(
            window.map(|(i, v)| (*i, *v)),
            [(4, 14), (3, 13), (2, 12), (1, 11)]
        );
        assert_eq!(pairs.len(), 4);
        let window = pairs.split_front_in::<4>(3).expect("four of four");
        assert_eq!(window.map(|(_, v)| *v), [13, 12, 11, 10]);
        assert_eq!(pairs.map(|(_, v)| *v).collect::<Vec<_>>(), [10]);
        let mut one = list.pairs(&values).expect("long enough");
        one.split_front(4);
        assert!(one.split_front_in::<4>(0).is_none());
        assert_eq!(one.len(), 1, "a refused window splits nothing");
    }

    #[test]
    #[should_panic(expected = "a front of 5 split from a window of 4")]
    fn a_window_front_longer_than_the_window_panics() {
        let list = Below::new(&[0, 1, 2, 3, 4, 5], 6).expect("below 6");
        let values = [0u8; 6];
        let _ = list
            .pairs(&values)
            .expect("long enough")
            .split_front_in::<4>(5);
    }

    #[test]
    #[should_panic]
    fn a_front_longer_than_the_list_panics() {
        let list = Below::new(&[0, 1], 2).expect("below 2");
        list.pairs(&[0u8; 2]).expect("long enough").split_front(3);
    }
}
