//! The locale files (`i18n/*.json`) compiled in, for the Rust code that speaks to people
//! outside the browser: the pages the server renders itself and the terminal client. (The web
//! UI compiles the same files into tables of its own at build time.)

use std::sync::OnceLock;

/// The languages Anteroom speaks, in the order a tie is broken.
pub const LOCALES: [&str; 4] = ["en", "zh", "ja", "ko"];

/// The texts of one language, parsed the first time it is asked for (a terminal command
/// needs one language, and English as the fallback, not all four).
fn file(locale: &str) -> Option<&'static serde_json::Value> {
    const TEXTS: [&str; 4] = [
        include_str!("../../i18n/en.json"),
        include_str!("../../i18n/zh.json"),
        include_str!("../../i18n/ja.json"),
        include_str!("../../i18n/ko.json"),
    ];
    static PARSED: [OnceLock<serde_json::Value>; 4] = [const { OnceLock::new() }; 4];
    let i = LOCALES.iter().position(|l| *l == locale)?;
    Some(
        PARSED[i].get_or_init(|| serde_json::from_str(TEXTS[i]).expect("the locale files are JSON (checked by tests)")),
    )
}

/// The text of a dotted key (`reason.quota`) in one language, if that language has it.
pub fn lookup(locale: &str, key: &str) -> Option<&'static str> {
    key.split('.')
        .try_fold(file(locale)?, |v, part| v.get(part))
        .and_then(|v| v.as_str())
}

/// The text of a key in `locale`, else in English (a key no file has: `None`).
pub fn text_or_english(locale: &str, key: &str) -> Option<&'static str> {
    lookup(locale, key).or_else(|| lookup("en", key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_found_in_its_language_and_english_stands_in() {
        assert_ne!(lookup("ja", "phase.Running"), lookup("en", "phase.Running"));
        assert!(lookup("ja", "phase.Running").is_some());
        assert_eq!(lookup("xx", "phase.Running"), None);
        assert_eq!(text_or_english("xx", "phase.Running"), lookup("en", "phase.Running"));
        assert_eq!(lookup("en", "phase"), None, "an object is not a text");
        assert_eq!(text_or_english("en", "no.such.key"), None);
    }
}
