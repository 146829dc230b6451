//! Reading a line from the notebook user, like Python's `input()`.
//!
//! The request travels as evcxr_input's line protocol: evcxr turns it into an `input_request` on
//! the kernel's stdin channel and writes the answer to this process's stdin.

use std::io::BufRead;

// The names evcxr listens for (shared with the evcxr_input crate).
const GET_CMD: &str = "EVCXR_INPUT_REQUEST";
const GET_CMD_PASSWORD: &str = "EVCXR_INPUT_REQUEST_PASSWORD";

/// evcxr keeps only the text between the first and second `:` of the request line, and the
/// line ends at the first newline. Colons and newlines therefore travel as look-alikes that
/// the gpulab kernel turns back (kernel/src/evcxr_interp.rs, `decode_prompt`); another
/// frontend still shows a readable prompt.
pub const PROMPT_COLON: char = '\u{A789}';
pub const PROMPT_NEWLINE: char = '\u{2028}';

fn encode_prompt(prompt: &str) -> String {
    prompt
        .replace(':', &PROMPT_COLON.to_string())
        .replace("\r\n", "\n")
        .replace(['\n', '\r'], &PROMPT_NEWLINE.to_string())
}

/// Asks the user for a line of text. Returns "" when the frontend cannot ask (for example when
/// a notebook runs unattended).
///
/// Interrupting the kernel while it waits (or just before it asks) ends the cell here, as
/// Python's `KeyboardInterrupt` does: the cell unwinds without running the rest, and the
/// variables of earlier cells are kept.
pub fn input(prompt: &str) -> String {
    ask(prompt, false)
}

/// Like [`input`], with the typed text hidden.
pub fn input_password(prompt: &str) -> String {
    ask(prompt, true)
}

fn ask(prompt: &str, password: bool) -> String {
    let cmd = if password { GET_CMD_PASSWORD } else { GET_CMD };
    println!("{cmd}:{}", encode_prompt(prompt));
    let mut line = String::new();
    let read = std::io::stdin().lock().read_line(&mut line);
    if crate::interrupt::requested() {
        // resume_unwind skips the panic hook: this is a stop the user asked for, not a bug.
        std::panic::resume_unwind(Box::new("input() was interrupted"));
    }
    if read.is_err() {
        return String::new();
    }
    line.trim_end_matches(['\r', '\n']).to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn prompts_keep_no_colon_or_newline_for_the_line_protocol() {
        let p = super::encode_prompt("Your name: \nand age:");
        assert!(!p.contains(':') && !p.contains('\n'));
        assert_eq!(
            p.replace(super::PROMPT_COLON, ":")
                .replace(super::PROMPT_NEWLINE, "\n"),
            "Your name: \nand age:"
        );
    }
}
