//! What a job's log may do to the terminal that shows it: nothing but print text. A log is
//! whatever the job's code wrote, and `ar logs` may run in an admin's terminal: escape sequences
//! there could retitle the window, rewrite the clipboard (OSC 52), hide lines, move the cursor
//! over what was printed, or feed some terminals' answer-back into the shell. So when stdout is
//! a terminal, every control character but newline and tab is dropped, with the whole escape
//! sequence it starts (CSI, OSC, DCS and the other strings, in their 7-bit and C1 forms); a
//! carriage return becomes a newline (a progress bar's updates become lines), and `\r\n` one
//! newline. Piped or redirected, the log is written as it came.
//!
//! A terminal that is not UTF-8 (an 8-bit locale) would read the bytes of some characters as C1
//! controls (`ĝ` is `C4 9D`, and `9D` is OSC there): to such a terminal only ASCII goes, every
//! other character written as `?` ([`TerminalText::ascii_only`]).
//!
//! Pure and streaming: a sequence split between two chunks is still recognised.

/// Where the cleaner stands between two chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Plain text.
    #[default]
    Text,
    /// After `ESC`.
    Escape,
    /// After `ESC` and intermediate bytes (`ESC ( B`): until a final byte.
    EscapeIntermediate,
    /// Inside a control sequence (`ESC [` or C1 `CSI`): until a final byte.
    Csi,
    /// Inside a string (OSC, DCS, SOS, PM, APC): until BEL or ST.
    Str,
    /// `ESC` inside a string: `\` ends it (ST).
    StrEscape,
}

/// The longest string (OSC, DCS…) swallowed before what follows counts as text again: an
/// unterminated one must not hide the rest of the log.
const MAX_STRING: usize = 4096;

/// Cleans a log for a terminal, chunk by chunk. The bytes are decoded as UTF-8 first (what is
/// not UTF-8 becomes U+FFFD), so a control character cannot be smuggled in as a broken or
/// overlong sequence that a terminal would decode anyway.
#[derive(Debug, Default)]
pub struct TerminalText {
    state: State,
    /// A `\r` not yet written: a newline, unless a `\n` follows (then that one).
    pending_cr: bool,
    /// The start of a UTF-8 sequence the chunk ended in.
    partial: Vec<u8>,
    /// Characters of the string being swallowed.
    string_len: usize,
    /// Only ASCII goes out (a terminal that is not UTF-8).
    ascii: bool,
}

impl TerminalText {
    /// A cleaner for a terminal that is not UTF-8: every character beyond ASCII becomes `?`.
    pub fn ascii_only() -> Self {
        TerminalText {
            ascii: true,
            ..TerminalText::default()
        }
    }

    /// The cleaner for a terminal in the locale the environment names (`LC_ALL`, else
    /// `LC_CTYPE`, else `LANG`): UTF-8 when it says so, ASCII only otherwise.
    pub fn for_locale(var: impl Fn(&str) -> Option<String>) -> Self {
        let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
            .into_iter()
            .find_map(|name| var(name).filter(|v| !v.is_empty()))
            .unwrap_or_default()
            .to_ascii_lowercase();
        if locale.contains("utf-8") || locale.contains("utf8") {
            TerminalText::default()
        } else {
            TerminalText::ascii_only()
        }
    }

    /// The printable part of `chunk`, given what came before it.
    pub fn clean(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.extend_from_slice(chunk);
        let mut out = String::with_capacity(bytes.len());
        let mut rest = bytes.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    text.chars().for_each(|c| self.push(c, &mut out));
                    break;
                }
                Err(e) => {
                    let (good, bad) = rest.split_at(e.valid_up_to());
                    // Valid up to here by the error's word.
                    std::str::from_utf8(good)
                        .unwrap_or_default()
                        .chars()
                        .for_each(|c| self.push(c, &mut out));
                    match e.error_len() {
                        Some(n) => {
                            self.push(char::REPLACEMENT_CHARACTER, &mut out);
                            rest = &bad[n..];
                        }
                        // The chunk ends inside a sequence: the next chunk completes it.
                        None => {
                            self.partial = bad.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out.into_bytes()
    }

    /// What is still held at the end of the log.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = String::new();
        if !self.partial.is_empty() {
            self.partial.clear();
            self.push(char::REPLACEMENT_CHARACTER, &mut out);
        }
        if self.pending_cr {
            out.push('\n');
            self.pending_cr = false;
        }
        out.into_bytes()
    }

    fn push(&mut self, c: char, out: &mut String) {
        match self.state {
            State::Text => self.text(c, out),
            State::Escape => match c {
                '[' => self.state = State::Csi,
                ']' | 'P' | 'X' | '^' | '_' => self.start_string(),
                '\u{1b}' => {}
                '\u{20}'..='\u{2f}' => self.state = State::EscapeIntermediate,
                _ => self.state = State::Text,
            },
            State::EscapeIntermediate => {
                if !('\u{20}'..='\u{2f}').contains(&c) {
                    self.state = State::Text;
                }
            }
            State::Csi => match c {
                '\u{40}'..='\u{7e}' => self.state = State::Text,
                '\u{20}'..='\u{3f}' => {}
                // Anything else cancels the sequence and is judged as text.
                _ => {
                    self.state = State::Text;
                    self.text(c, out);
                }
            },
            State::Str | State::StrEscape => self.string(c, out),
        }
    }

    fn text(&mut self, c: char, out: &mut String) {
        if self.pending_cr {
            self.pending_cr = false;
            out.push('\n');
            if c == '\n' {
                return;
            }
        }
        match c {
            '\n' | '\t' => out.push(c),
            '\r' => self.pending_cr = true,
            '\u{1b}' => self.state = State::Escape,
            '\u{9b}' => self.state = State::Csi,
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => self.start_string(),
            c if c.is_control() => {}
            c if self.ascii && !c.is_ascii() => out.push('?'),
            c => out.push(c),
        }
    }

    fn start_string(&mut self) {
        self.state = State::Str;
        self.string_len = 0;
    }

    fn string(&mut self, c: char, out: &mut String) {
        self.string_len += 1;
        if self.string_len > MAX_STRING {
            self.state = State::Text;
            self.text(c, out);
            return;
        }
        match (self.state, c) {
            (_, '\u{7}') | (_, '\u{9c}') | (State::StrEscape, '\\') => self.state = State::Text,
            (_, '\u{1b}') => self.state = State::StrEscape,
            _ => self.state = State::Str,
        }
    }
}

/// `text` cleaned in one piece.
pub fn clean_all(text: &[u8]) -> Vec<u8> {
    let mut t = TerminalText::default();
    let mut out = t.clean(text);
    out.extend(t.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(bytes: &[u8]) -> String {
        String::from_utf8_lossy(&clean_all(bytes)).into_owned()
    }

    #[test]
    fn text_newlines_tabs_and_unicode_pass_unchanged() {
        assert_eq!(s(b"epoch 1\tloss 0.5\n"), "epoch 1\tloss 0.5\n");
        assert_eq!(s("é £ 日本語 😀\n".as_bytes()), "é £ 日本語 😀\n");
    }

    #[test]
    fn escape_sequences_are_dropped_whole() {
        // Colours, cursor moves, clearing the screen.
        assert_eq!(s(b"\x1b[31mred\x1b[0m \x1b[2J\x1b[1;1Hhome"), "red home");
        // A window title and the clipboard (OSC 52), ended by BEL or by ST.
        assert_eq!(s(b"a\x1b]0;pwned\x07b\x1b]52;c;ZWNobyBoaQ==\x1b\\c"), "abc");
        // DCS, APC and a charset switch.
        assert_eq!(s(b"a\x1bP1$r\x1b\\b\x1b_x\x1b\\c\x1b(Bd"), "abcd");
        // The C1 forms: CSI as U+009B, OSC as U+009D ended by U+009C.
        assert_eq!(s("a\u{9b}31mb\u{9d}0;t\u{9c}c".as_bytes()), "abc");
        // Other controls: BEL, backspace, NUL, DEL.
        assert_eq!(s(b"a\x07b\x08c\x00d\x7fe"), "abcde");
        // Not UTF-8: a replacement character, never a control a lenient terminal would decode
        // (an overlong CSI, a lead byte cut from its continuation by a dropped NUL).
        assert_eq!(s(b"a\xe0\x82\x9b31mb"), "a\u{fffd}\u{fffd}\u{fffd}31mb");
        assert_eq!(s(b"a\xc2\x00\x9b"), "a\u{fffd}\u{fffd}");
    }

    #[test]
    fn a_terminal_that_is_not_utf8_gets_ascii_only() {
        // U+011D U+011C are `C4 9D` / `C4 9C`: OSC and ST to an 8-bit terminal.
        let mut t = TerminalText::ascii_only();
        assert_eq!(t.clean("aĝ52;c;ZWNobw==Ĝb é\n".as_bytes()), b"a?52;c;ZWNobw==?b ?\n");
        let locale = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
        };
        assert!(!TerminalText::for_locale(locale(&[("LANG", "en_US.UTF-8")])).ascii);
        assert!(!TerminalText::for_locale(locale(&[("LC_ALL", "ja_JP.utf8"), ("LANG", "C")])).ascii);
        assert!(TerminalText::for_locale(locale(&[("LANG", "de_DE.ISO-8859-1")])).ascii);
        assert!(TerminalText::for_locale(locale(&[("LC_ALL", "C"), ("LANG", "en_US.UTF-8")])).ascii);
        assert!(TerminalText::for_locale(locale(&[])).ascii, "no locale: POSIX, ASCII");
    }

    #[test]
    fn carriage_returns_become_newlines_and_crlf_one() {
        assert_eq!(s(b"10%\r20%\r100%\n"), "10%\n20%\n100%\n");
        assert_eq!(s(b"line\r\nnext\r\n"), "line\nnext\n");
        assert_eq!(s(b"end\r"), "end\n");
    }

    #[test]
    fn an_unterminated_string_does_not_hide_the_rest_of_the_log() {
        let mut log = b"a\x1b]0;".to_vec();
        log.extend(std::iter::repeat_n(b'x', MAX_STRING + 10));
        // The string's first MAX_STRING characters ("0;" and x's) go; the rest is text.
        assert_eq!(s(&log), format!("a{}", "x".repeat(12)));
    }

    proptest::proptest! {
        /// Cut anywhere, the chunks clean to what the whole does, and nothing that reaches the
        /// terminal is a control character but newline and tab.
        #[test]
        fn chunks_clean_like_the_whole_and_leave_no_control(
            bytes in proptest::collection::vec(proptest::prop_oneof![
                proptest::num::u8::ANY,
                proptest::sample::select(vec![0x1B_u8, b'[', b']', b'\\', 0x07, 0xC2, 0x9B, 0x9C, 0x9D, 0xE0, 0x82, b'\r', b'\n', b'm']),
            ], 0..200),
            cuts in proptest::collection::vec(0usize..200, 0..6),
        ) {
            let whole = clean_all(&bytes);
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            points.sort_unstable();
            let mut t = TerminalText::default();
            let mut pieces = Vec::new();
            let mut from = 0;
            for to in points.into_iter().chain([bytes.len()]) {
                pieces.extend(t.clean(&bytes[from..to]));
                from = to;
            }
            pieces.extend(t.finish());
            proptest::prop_assert_eq!(&pieces, &whole);
            let text = String::from_utf8(whole.clone());
            proptest::prop_assert!(text.is_ok(), "always UTF-8: {:?}", whole);
            let text = text.unwrap_or_default();
            proptest::prop_assert!(
                !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
                "{:?}", text
            );
        }
    }
}
