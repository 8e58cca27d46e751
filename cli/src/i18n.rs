//! Messages in the user's language, from the same locale files as the web UI (`i18n/*.json`,
//! compiled in): the CLI's own words live under `cli.*`, and the names of phases, reasons and
//! API error codes are the UI's, so a job reads the same in the browser and in a terminal.

pub use anteroom_shared::i18n::LOCALES;

/// The locale a POSIX environment asks for: the first set of `LC_ALL`, `LC_MESSAGES`, `LANG`
/// (`ja_JP.UTF-8` → `ja`); English for `C`, `POSIX`, anything unknown, or nothing set.
pub fn from_env(get: impl Fn(&str) -> Option<String>) -> &'static str {
    let value = ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .find_map(|name| get(name).filter(|v| !v.is_empty()))
        .unwrap_or_default();
    let primary = value
        .split(['_', '.', '@', '-'])
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    LOCALES.into_iter().find(|l| *l == primary).unwrap_or("en")
}

/// The texts of one language, chosen once per process.
#[derive(Debug, Clone, Copy)]
pub struct I18n {
    locale: &'static str,
}

impl I18n {
    /// The language of this process's environment.
    pub fn from_process_env() -> Self {
        Self::new(from_env(|name| std::env::var(name).ok()))
    }

    /// A given language (`en` for an unknown one).
    pub fn new(locale: &str) -> Self {
        let locale = LOCALES.into_iter().find(|l| *l == locale).unwrap_or("en");
        Self { locale }
    }

    /// The text of a key, in this language, else English.
    pub fn lookup(&self, key: &str) -> Option<String> {
        anteroom_shared::i18n::text_or_english(self.locale, key).map(str::to_owned)
    }

    /// The text of a key (the key itself when no file has it: a test keeps that from happening
    /// for the CLI's own keys).
    pub fn t(&self, key: &str) -> String {
        self.lookup(key).unwrap_or_else(|| key.to_owned())
    }

    /// The text of a key with its `{placeholders}` filled in.
    pub fn tf(&self, key: &str, args: &[(&str, &str)]) -> String {
        fill(&self.t(key), args)
    }
}

/// Replaces each `{name}` of `text` by its value.
pub fn fill(text: &str, args: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                match args.iter().find(|(n, _)| *n == name) {
                    Some((_, value)) => out.push_str(value),
                    None => {
                        out.push('{');
                        out.push_str(name);
                        out.push('}');
                    }
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locale_comes_from_the_posix_variables_in_their_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(from_env(env(&[("LANG", "ja_JP.UTF-8")])), "ja");
        assert_eq!(
            from_env(env(&[("LANG", "ja_JP.UTF-8"), ("LC_ALL", "ko_KR.UTF-8")])),
            "ko"
        );
        assert_eq!(from_env(env(&[("LANG", "zh_CN"), ("LC_MESSAGES", "")])), "zh");
        assert_eq!(from_env(env(&[("LANG", "C.UTF-8")])), "en");
        assert_eq!(from_env(env(&[("LANG", "fr_FR.UTF-8")])), "en");
        assert_eq!(from_env(env(&[])), "en");
    }

    #[test]
    fn placeholders_are_filled_and_unknown_ones_kept() {
        assert_eq!(
            fill("job {id} in {queue}", &[("id", "7"), ("queue", "q")]),
            "job 7 in q"
        );
        assert_eq!(fill("{a} {b}", &[("a", "1")]), "1 {b}");
        assert_eq!(fill("open {", &[]), "open {");
    }

    #[test]
    fn a_language_falls_back_to_english_then_to_the_key() {
        let ja = I18n::new("ja");
        assert_ne!(ja.t("phase.Running"), I18n::new("en").t("phase.Running"));
        assert_eq!(ja.t("no.such.key"), "no.such.key");
        assert_eq!(I18n::new("xx").t("phase.Running"), I18n::new("en").t("phase.Running"));
    }

    /// Every `"cli.…"` key written in the CLI's sources exists in all four files.
    #[test]
    fn every_key_the_cli_uses_exists_in_every_language() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut stack = vec![std::path::PathBuf::from(dir)];
        let mut keys = Vec::new();
        while let Some(p) = stack.pop() {
            if p.is_dir() {
                stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for piece in text.split("\"cli.").skip(1) {
                    let key: String = piece
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '_')
                        .collect();
                    if piece[key.len()..].starts_with('"') && !key.is_empty() && !key.ends_with('.') {
                        keys.push(format!("cli.{key}"));
                    }
                }
            }
        }
        assert!(keys.len() > 30, "found only {} keys", keys.len());
        for locale in LOCALES {
            for key in &keys {
                let found = anteroom_shared::i18n::lookup(locale, key);
                assert!(found.is_some(), "i18n/{locale}.json lacks {key}");
            }
        }
    }
}
