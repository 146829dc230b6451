//! Reading a line from the notebook user, like Python's `input()`.
//!
//! The request travels as evcxr_input's line protocol: evcxr turns it into an `input_request` on
//! the kernel's stdin channel and writes the answer to this process's stdin.

use std::io::BufRead;

// The names evcxr listens for (shared with the evcxr_input crate).
const GET_CMD: &str = "EVCXR_INPUT_REQUEST";
const GET_CMD_PASSWORD: &str = "EVCXR_INPUT_REQUEST_PASSWORD";

/// Asks the user for a line of text. Returns "" when the frontend cannot ask (for example when
/// a notebook runs unattended).
pub fn input(prompt: &str) -> String {
    ask(prompt, false)
}

/// Like [`input`], with the typed text hidden.
pub fn input_password(prompt: &str) -> String {
    ask(prompt, true)
}

fn ask(prompt: &str, password: bool) -> String {
    let cmd = if password { GET_CMD_PASSWORD } else { GET_CMD };
    // The prompt must stay on the request's one line.
    println!("{cmd}:{}", prompt.replace('\n', " "));
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return String::new();
    }
    line.trim_end_matches(['\r', '\n']).to_owned()
}
