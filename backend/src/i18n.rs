//! The few pages the server renders itself (a simulated notebook) speak the viewer's language
//! from the same locale files as the UI (`i18n/*.json`, compiled in), so no user-visible text
//! lives outside them.

pub use anteroom_shared::i18n::LOCALES;

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
    anteroom_shared::i18n::text_or_english(locale, key).map_or_else(|| key.to_owned(), str::to_owned)
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
