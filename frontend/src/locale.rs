//! The languages of the UI and how a language tag maps to one. Apart from the translations
//! (`i18n`) so that formatting (`format`), which the translations use for plurals and numbers,
//! needs nothing from them.

/// A language of the UI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Locale {
    /// English.
    En,
    /// Chinese (simplified).
    Zh,
    /// Japanese.
    Ja,
    /// Korean.
    Ko,
}

impl Locale {
    /// All locales, in the order of the switcher.
    pub const ALL: [Locale; 4] = [Locale::En, Locale::Zh, Locale::Ja, Locale::Ko];

    /// BCP 47 code, also the file name in `i18n/`.
    pub fn code(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::Zh => "zh",
            Locale::Ja => "ja",
            Locale::Ko => "ko",
        }
    }

    /// The locale for a language tag such as `zh-CN` or `ja`.
    pub fn from_tag(tag: &str) -> Option<Locale> {
        let primary = tag.split(['-', '_']).next()?.to_ascii_lowercase();
        Locale::ALL.into_iter().find(|l| l.code() == primary)
    }
}
