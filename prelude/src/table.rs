//! The small tables the status reports show (`nvidia_smi()`, `cpu_info()`, `machine()`,
//! `cuda::libraries()`): an HTML table for JupyterLab and a framed text table, shaped like
//! nvidia-smi's, for plain-text frontends. A leaf module: it knows nothing about what the rows
//! describe, so the reports (and `cuda`, which `smi` depends on) can share it without a cycle.

use crate::display::html_escape;

pub(crate) fn html_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in header {
        s += &format!("<th>{}</th>", html_escape(h));
    }
    s += "</tr></thead><tbody>";
    for r in rows {
        s += "<tr>";
        for c in r {
            s += &format!("<td>{}</td>", html_escape(c));
        }
        s += "</tr>";
    }
    s + "</tbody></table>"
}

/// Columns padded to their widest cell, framed like nvidia-smi's table.
pub(crate) fn text_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let rule: String = format!(
        "+{}+\n",
        w.iter()
            .map(|n| "-".repeat(n + 2))
            .collect::<Vec<_>>()
            .join("+")
    );
    let line = |cells: Vec<&str>| -> String {
        let parts: Vec<String> = cells
            .iter()
            .zip(&w)
            .map(|(c, n)| format!(" {c:<n$} "))
            .collect();
        format!("|{}|\n", parts.join("|"))
    };
    let mut s = rule.clone();
    s += &line(header.to_vec());
    s += &rule.replace('-', "=");
    for r in rows {
        s += &line(r.iter().map(String::as_str).collect());
    }
    s + &rule
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_tables_pad_every_column_to_its_widest_cell() {
        let t = text_table(&["gpu", "name"], &[vec!["0".into(), "NVIDIA H200".into()]]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            [
                "+-----+-------------+",
                "| gpu | name        |",
                "+=====+=============+",
                "| 0   | NVIDIA H200 |",
                "+-----+-------------+",
            ]
        );
    }

    #[test]
    fn html_tables_escape_their_cells() {
        let t = html_table(&["a<b"], &[vec!["x & \"y\"".into()]]);
        assert_eq!(
            t,
            "<table><thead><tr><th>a&lt;b</th></tr></thead><tbody>\
             <tr><td>x &amp; &quot;y&quot;</td></tr></tbody></table>"
        );
    }
}
