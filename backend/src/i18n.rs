//! The few pages the server renders itself (a simulated notebook) speak the viewer's language
//! from the same locale files as the UI (`i18n/*.json`, compiled in), so no user-visible text
//! lives outside them.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The locales, in the order a tie is broken.
pub const LOCALES: [&str; 4] = ["en", "zh", "ja", "ko"];

fn files() -> &'static HashMap<&'static str, serde_json::Value> {
    static FILES: OnceLock<HashMap<&'static str, serde_json::Value>> = OnceLock::new();
    FILES.get_or_init(|| {
        let parse = |text: &str| serde_json::from_str(text).expect("the locale files are JSON (checked by tests)");
        HashMap::from([
            ("en", parse(include_str!("../../i18n/en.json"))),
            ("zh", parse(include_str!("../../i18n/zh.json"))),
            ("ja", parse(include_str!("../../i18n/ja.json"))),
            ("ko", parse(include_str!("../../i18n/ko.json"))),
        ])
    })
}

/// The first locale of `Accept-Language` (`ja-JP,ja;q=0.9,en;q=0.8`) that Anteroom speaks, by
/// its quality; English otherwise.
pub fn negotiate(accept_language: Option<&str>) -> &'static str {
    let mut best: Option<(f32, &'static str)> = None;
    for part in accept_language.unwrap_or_default().split(',') {
        let mut fields = part.split(';');
        let tag = fields.next().unwrap_or_default().trim().to_ascii_lowercase();
        let quality = fields
            .find_map(|f| f.trim().strip_prefix("q=").and_then(|q| q.parse::<f32>().ok()))
            .unwrap_or(1.0);
        let primary = tag.split('-').next().unwrap_or_default();
        if let Some(locale) = LOCALES.iter().find(|l| **l == primary)
            && quality > 0.0
            && best.is_none_or(|(q, _)| quality > q)
        {
            best = Some((quality, locale));
        }
    }
    best.map_or("en", |(_, l)| l)
}

/// The text of `key` (`notebook.simulatedTitle`) in `locale`, else in English, else the key.
pub fn text(locale: &str, key: &str) -> String {
    let lookup = |locale: &str| {
        key.split('.')
            .try_fold(files().get(locale)?, |v, part| v.get(part))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    lookup(locale)
        .or_else(|| lookup("en"))
        .unwrap_or_else(|| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_viewer_s_language_is_chosen_by_quality_and_english_is_the_fallback() {
        assert_eq!(negotiate(Some("ja-JP,ja;q=0.9,en;q=0.8")), "ja");
        assert_eq!(negotiate(Some("fr-FR,ko;q=0.5,zh-CN;q=0.7")), "zh");
        assert_eq!(negotiate(Some("fr")), "en");
        assert_eq!(negotiate(Some("ko;q=0")), "en");
        assert_eq!(negotiate(None), "en");
        assert_ne!(text("ko", "nav.jobs"), text("en", "nav.jobs"), "each language its own");
        assert_ne!(
            text("ja", "notebook.simulatedTitle"),
            text("en", "notebook.simulatedTitle")
        );
        assert_eq!(text("en", "no.such.key"), "no.such.key");
    }
}
