//! A command written as one line, the way a shell reads it: words split at unquoted
//! whitespace; `'…'` literal; `"…"` with `\"`, `\\`, `\$` and `` \` `` escaped; a backslash
//! outside quotes escapes the next character. So `bash -c "python train.py && echo done"` is
//! three words, not five. No expansion of any kind happens: `$HOME` stays `$HOME`.
//! [`join`] writes words back as a line that [`split`] reads as the same words.

/// Why a line is not a list of words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShellWordsError {
    /// A `'` or `"` without its closing one.
    #[error("a quote is not closed")]
    UnclosedQuote,
    /// A `\` at the very end, escaping nothing.
    #[error("the line ends with a backslash")]
    TrailingBackslash,
}

/// The words of `line`.
pub fn split(line: &str) -> Result<Vec<String>, ShellWordsError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word has begun (`''` is an empty word, not nothing).
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(ShellWordsError::UnclosedQuote),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            // A backslash and a newline join lines.
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(ShellWordsError::UnclosedQuote),
                        },
                        Some(c) => word.push(c),
                        None => return Err(ShellWordsError::UnclosedQuote),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(ShellWordsError::TrailingBackslash),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The words as one line [`split`] reads back as them: plain words as they are, the others in
/// single quotes (a `'` inside written `'\''`).
pub fn join<S: AsRef<str>>(words: &[S]) -> String {
    words.iter().map(|w| quote(w.as_ref())).collect::<Vec<_>>().join(" ")
}

fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(line: &str) -> Vec<String> {
        split(line).unwrap()
    }

    #[test]
    fn a_shell_reads_these_lines_so() {
        assert_eq!(words("sleep 3600"), ["sleep", "3600"]);
        assert_eq!(
            words(r#"bash -c "python train.py --lr 0.1 && echo 'done'""#),
            ["bash", "-c", "python train.py --lr 0.1 && echo 'done'"]
        );
        assert_eq!(words("  a\t b \n c  "), ["a", "b", "c"]);
        assert_eq!(words(r"echo it\'s"), ["echo", "it's"]);
        assert_eq!(words(r#"say "a \"b\" \$HOME \n""#), ["say", r#"a "b" $HOME \n"#]);
        assert_eq!(words("x '' \"\" y"), ["x", "", "", "y"]);
        assert_eq!(words("a'b'\"c\"d"), ["abcd"]);
        assert_eq!(words("echo $HOME"), ["echo", "$HOME"], "nothing is expanded");
        assert_eq!(words("a\\\nb"), ["ab"]);
        assert!(words("").is_empty());
        assert!(words("   ").is_empty());
    }

    #[test]
    fn unfinished_lines_are_refused() {
        assert_eq!(split("echo 'oops"), Err(ShellWordsError::UnclosedQuote));
        assert_eq!(split("echo \"oops"), Err(ShellWordsError::UnclosedQuote));
        assert_eq!(split("echo \"oops\\"), Err(ShellWordsError::UnclosedQuote));
        assert_eq!(split("echo oops\\"), Err(ShellWordsError::TrailingBackslash));
    }

    #[test]
    fn join_quotes_only_what_needs_it() {
        assert_eq!(join(&["python", "train.py", "--lr=0.1"]), "python train.py --lr=0.1");
        assert_eq!(join(&["bash", "-c", "a && b"]), "bash -c 'a && b'");
        assert_eq!(join(&["it's", ""]), r"'it'\''s' ''");
    }

    proptest! {
        /// Whatever the words (quotes, backslashes, newlines, empty ones, any Unicode), the
        /// line `join` writes splits back into them.
        #[test]
        fn join_then_split_gives_the_words_back(ws in proptest::collection::vec(any::<String>(), 0..6)) {
            prop_assert_eq!(split(&join(&ws)).unwrap(), ws);
        }

        /// `split` never panics, and what it accepts it accepts again once joined.
        #[test]
        fn split_is_total_and_stable(line in any::<String>()) {
            if let Ok(ws) = split(&line) {
                prop_assert_eq!(split(&join(&ws)).unwrap(), ws);
            }
        }
    }
}
