//! This session's executed cells, for `history_request` (tail, range and search).

use crate::messages::{self, HistAccess};
use serde_json::{json, Value};

/// Session number reported for the running session; earlier sessions are not stored.
const SESSION: u64 = 1;

#[derive(Default)]
pub struct History {
    cells: Vec<(u64, String)>,
}

impl History {
    pub fn push(&mut self, line: u64, code: &str) {
        self.cells.push((line, code.to_owned()));
    }

    fn entry(&self, line: u64, input: &str, output: bool) -> Value {
        if output {
            json!([SESSION, line, [input, Value::Null]])
        } else {
            json!([SESSION, line, input])
        }
    }

    /// Answers a `history_request` with the `history` list of its reply.
    pub fn query(&self, req: &messages::History) -> Vec<Value> {
        let n = req.n.map(|n| n as usize);
        let picked: Vec<&(u64, String)> = match req.hist_access_type {
            HistAccess::Range => {
                let start = req.start.unwrap_or(0);
                self.cells
                    .iter()
                    .filter(|(line, _)| {
                        (*line as i64) >= start && req.stop.is_none_or(|s| (*line as i64) < s)
                    })
                    .collect()
            }
            HistAccess::Search => {
                let pattern = req.pattern.as_deref().unwrap_or("*");
                let mut hits: Vec<&(u64, String)> = self
                    .cells
                    .iter()
                    .filter(|(_, code)| glob_match(pattern, code))
                    .collect();
                if req.unique {
                    // Keep the most recent copy of each input, in order.
                    let mut seen = std::collections::HashSet::new();
                    hits.reverse();
                    hits.retain(|(_, code)| seen.insert(code.clone()));
                    hits.reverse();
                }
                last_n(hits, n)
            }
            HistAccess::Tail => last_n(self.cells.iter().collect(), n.or(Some(10))),
        };
        picked
            .into_iter()
            .map(|(line, code)| self.entry(*line, code, req.output))
            .collect()
    }
}

fn last_n<T>(mut items: Vec<T>, n: Option<usize>) -> Vec<T> {
    if let Some(n) = n {
        if items.len() > n {
            items.drain(..items.len() - n);
        }
    }
    items
}

/// Glob matching as IPython's history search does it: `*` any run, `?` one character.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative wildcard matching with backtracking to the last star.
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> History {
        let mut h = History::default();
        for (i, code) in ["let a = 1;", "println!(\"hi\");", "let b = a + 1;", "a"]
            .iter()
            .enumerate()
        {
            h.push(i as u64 + 1, code);
        }
        h
    }

    fn q(v: Value) -> messages::History {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn tail_range_search() {
        let h = history();
        let tail = h.query(&q(json!({"hist_access_type": "tail", "n": 2})));
        assert_eq!(
            tail,
            vec![json!([1, 3, "let b = a + 1;"]), json!([1, 4, "a"])]
        );
        let range = h.query(&q(
            json!({"hist_access_type": "range", "session": 0, "start": 2, "stop": 4}),
        ));
        assert_eq!(range.len(), 2);
        assert_eq!(range[0][1], 2);
        let search = h.query(&q(json!({"hist_access_type": "search", "pattern": "let*"})));
        assert_eq!(search.len(), 2);
        let none = h.query(&q(json!({"hist_access_type": "search", "pattern": "zzz*"})));
        assert!(none.is_empty());
    }

    #[test]
    fn glob() {
        assert!(glob_match("a*c", "abbbc"));
        assert!(glob_match("?b*", "abzz"));
        assert!(!glob_match("a*d", "abc"));
        assert!(glob_match("*", ""));
    }
}
