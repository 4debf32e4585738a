//! The scale a headline was measured at, set against the scale of the paper's smallest input:
//! a figure from a graph 16 times smaller than the paper's can answer a different question
//! (its arrays fit TLB reaches that the paper's overflowed), and the report says so beside it.

use serde::{Deserialize, Serialize};

/// How many times fewer vertices than the paper's smallest input make a headline's scale "far
/// below" the paper's.
pub const FAR_BELOW: u64 = 16;

/// The paper's smallest input, as a claim records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaperScale {
    /// Vertices of the smallest input the paper's figure was measured on.
    pub vertices: u64,
    /// The inputs as the paper (or what the project has of it) describes them.
    pub text: String,
}

/// The scale a headline's runs were measured at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scale {
    /// The inputs, as the plan names them (`kron:22`, `urand:22, kron:22`, `2000000 keys`).
    pub text: String,
    /// Vertices of the smallest graph among them; `null` when they are not graphs, or a
    /// graph file whose size the plan does not say.
    pub vertices: Option<u64>,
    /// Whether the smallest graph has at least [`FAR_BELOW`] times fewer vertices than the
    /// paper's smallest input.
    pub far_below_paper: bool,
}

/// Vertices of a generated graph from its spec (`kron:22`, `kron:22:8`, `urand:20`,
/// `road:6000x6000`, `grid:WxH`, `chain:N`, `star:LEAVES`); `None` for a file or a spec this
/// does not know.
pub fn graph_vertices(spec: &str) -> Option<u64> {
    let (kind, rest) = spec.split_once(':')?;
    let first = rest.split(':').next()?;
    match kind {
        "kron" | "urand" => {
            let s: u32 = first.parse().ok()?;
            1u64.checked_shl(s)
        }
        "road" | "grid" => {
            let (w, h) = first.split_once('x')?;
            w.parse::<u64>().ok()?.checked_mul(h.parse().ok()?)
        }
        "chain" => first.parse().ok(),
        "star" => first.parse::<u64>().ok()?.checked_add(1),
        _ => None,
    }
}

/// The scale of runs on `graphs` (in plan order, repeats allowed) against `paper`.
pub fn of_graphs(graphs: &[&str], paper: Option<&PaperScale>) -> Option<Scale> {
    let mut names: Vec<&str> = Vec::new();
    for g in graphs {
        if !names.contains(g) {
            names.push(g);
        }
    }
    if names.is_empty() {
        return None;
    }
    let vertices = names.iter().filter_map(|g| graph_vertices(g)).min();
    let far_below_paper = match (vertices, paper) {
        (Some(v), Some(p)) => v.saturating_mul(FAR_BELOW) <= p.vertices,
        _ => false,
    };
    Some(Scale {
        text: names.join(", "),
        vertices,
        far_below_paper,
    })
}

/// A scale that is not a graph's (`2000000 keys`): never set against a paper's vertices.
pub fn of_other(text: String) -> Scale {
    Scale {
        text,
        vertices: None,
        far_below_paper: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_graphs_give_their_vertices_and_files_none() {
        assert_eq!(graph_vertices("kron:22"), Some(1 << 22));
        assert_eq!(graph_vertices("kron:22:8"), Some(1 << 22));
        assert_eq!(graph_vertices("urand:20"), Some(1 << 20));
        assert_eq!(graph_vertices("road:6000x6000"), Some(36_000_000));
        assert_eq!(graph_vertices("star:9"), Some(10));
        assert_eq!(graph_vertices("kron:99"), None);
        assert_eq!(graph_vertices("g.hwg"), None);
        assert_eq!(graph_vertices("kron:x"), None);
    }

    #[test]
    fn far_below_is_sixteen_times_fewer_vertices_than_the_papers_smallest() {
        let paper = PaperScale {
            vertices: 1 << 24,
            text: "GAP's graphs".into(),
        };
        let at = |g: &[&str]| of_graphs(g, Some(&paper)).expect("scale");
        assert!(at(&["kron:20"]).far_below_paper, "16x fewer");
        assert!(!at(&["kron:21"]).far_below_paper, "8x fewer");
        let mixed = at(&["kron:22", "kron:18", "kron:22"]);
        assert_eq!(mixed.text, "kron:22, kron:18");
        assert_eq!(mixed.vertices, Some(1 << 18));
        assert!(mixed.far_below_paper, "the smallest graph decides");
        assert!(!of_graphs(&["kron:10"], None).expect("s").far_below_paper);
        assert!(
            !at(&["g.hwg"]).far_below_paper,
            "a file's size is not known"
        );
        assert_eq!(of_graphs(&[], Some(&paper)), None);
    }
}
