//! A plain text table: columns padded to their widest cell, numbers right-aligned.

/// Rows of cells under a header.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row (missing cells print empty).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Render as a Markdown table (pipes in cells escaped).
    pub fn markdown(&self) -> String {
        let line = |cells: &[String]| {
            let cells: Vec<String> = (0..self.header.len())
                .map(|i| cells.get(i).map_or("", String::as_str).replace('|', "\\|"))
                .collect();
            format!("| {} |\n", cells.join(" | "))
        };
        let mut out = line(&self.header);
        out.push('|');
        out.push_str(&" --- |".repeat(self.header.len()));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }

    /// Render with two spaces between columns.
    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut w: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(cols) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let numeric = |s: &str| s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.');
        let line = |cells: &[String]| {
            let mut out = String::new();
            for (i, width) in w.iter().enumerate() {
                let c = cells.get(i).map(String::as_str).unwrap_or("");
                let pad = width - c.chars().count();
                if i > 0 {
                    out.push_str("  ");
                }
                if i > 0 && numeric(c) {
                    out.push_str(&" ".repeat(pad));
                    out.push_str(c);
                } else {
                    out.push_str(c);
                    if i + 1 < cols {
                        out.push_str(&" ".repeat(pad));
                    }
                }
            }
            out.trim_end().to_string() + "\n"
        };
        let mut out = line(&self.header);
        for r in &self.rows {
            out.push_str(&line(r));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns() {
        let mut t = Table::new(["name", "value"]);
        t.row(["a", "1"]).row(["longer", "100"]);
        assert_eq!(t.render(), "name    value\na           1\nlonger    100\n");
    }
}
