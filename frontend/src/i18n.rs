//! Translations: every visible string goes through [`I18n::t`] with a key checked at compile
//! time (`k!("nav.jobs")`). The locale comes from the saved choice, else the browser's
//! languages, else English; `<html lang>` follows it.

use leptos::prelude::*;

pub use crate::locale::Locale;

impl Locale {
    /// The language's own name, for the switcher.
    pub fn native_name(self) -> &'static str {
        lookup(self, k!("lang.self"))
    }
}

/// Index of a translation key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key(pub usize);

include!(concat!(env!("OUT_DIR"), "/i18n_table.rs"));

/// The text of a key in a locale.
pub fn lookup(locale: Locale, key: Key) -> &'static str {
    table(locale)[key.0]
}

/// The key of a dotted name known only at run time (an API error's `error.<code>`).
pub fn key_named(name: &str) -> Option<Key> {
    KEY_NAMES.binary_search(&name).ok().map(Key)
}

const STORAGE_KEY: &str = "anteroom.locale";

/// The current locale, shared through context.
#[derive(Clone, Copy)]
pub struct I18n {
    locale: RwSignal<Locale>,
}

impl I18n {
    /// The locale chosen before, else the browser's first supported language, else English.
    pub fn detect() -> Self {
        let saved = local_storage()
            .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
            .and_then(|c| Locale::from_tag(&c));
        let locale = saved.or_else(browser_locale).unwrap_or(Locale::En);
        Self {
            locale: RwSignal::new(locale),
        }
    }

    /// A fixed locale, for tests of what components write (no browser to detect one from).
    #[cfg(test)]
    pub fn fixed(locale: Locale) -> Self {
        Self {
            locale: RwSignal::new(locale),
        }
    }

    /// The current locale (reactive).
    pub fn locale(&self) -> Locale {
        self.locale.get()
    }

    /// Switches language and remembers the choice.
    pub fn set_locale(&self, locale: Locale) {
        if let Some(s) = local_storage() {
            let _ = s.set_item(STORAGE_KEY, locale.code());
        }
        self.locale.set(locale);
    }

    /// The text of `key` in the current locale (reactive).
    pub fn t(&self, key: Key) -> &'static str {
        lookup(self.locale.get(), key)
    }

    /// The text of `key` with each `{name}` replaced by its value.
    pub fn tf(&self, key: Key, args: &[(&str, &str)]) -> String {
        fill(self.t(key), args)
    }

    /// The singular or plural text for `n` by the locale's plural rules (Chinese, Japanese and
    /// Korean have one form: their `one` and `other` texts are the same), with `{count}` and
    /// `args` filled in.
    pub fn tp(&self, one: Key, other: Key, n: u64, args: &[(&str, &str)]) -> String {
        let locale = self.locale();
        let key = if crate::format::is_plural_one(locale, n as f64) {
            one
        } else {
            other
        };
        let count = crate::format::number(locale, n as f64, 0);
        let mut all = vec![("count", count.as_str())];
        all.extend_from_slice(args);
        fill(lookup(locale, key), &all)
    }

    /// What to tell a person about a failed call: the translation of `error.<code>`, or the
    /// API's English message for a code the UI was not taught (a test keeps that from
    /// happening for every code the API answers).
    pub fn failure(&self, failure: &crate::api::ApiFailure) -> String {
        self.error_text(&failure.code, &failure.message)
    }

    /// The text of an API error code (`error.{code}`), or the server's message for a code this
    /// build does not know.
    pub fn error_text(&self, code: &str, message: &str) -> String {
        match key_named(&format!("error.{code}")) {
            Some(key) => self.t(key).to_owned(),
            None => message.to_owned(),
        }
    }
}

impl I18n {
    /// The fields a validation failure names, as `(field, what is wrong)` in the language of
    /// this language: the translation of the field's `code` with its `params`, or the server's English
    /// text for a code this build was not taught (`invalid` has none).
    pub fn failure_fields(&self, failure: &crate::api::ApiFailure) -> Vec<(String, String)> {
        let Some(list) = failure
            .details
            .as_ref()
            .and_then(|d| d.get("fields"))
            .and_then(|f| f.as_array())
        else {
            return Vec::new();
        };
        list.iter()
            .filter_map(|f| {
                let message = f.get("message").and_then(|m| m.as_str()).unwrap_or_default();
                let code = f.get("code").and_then(|c| c.as_str()).unwrap_or("invalid");
                Some((
                    f.get("field")?.as_str()?.to_owned(),
                    self.field_rule(code, f.get("params"), message),
                ))
            })
            .collect()
    }

    /// A resource's name in the reader's language: CPU, memory, ephemeral storage; an
    /// accelerator by its model (`a100`), a name people use in every language.
    pub fn resource_name(&self, resource: &str) -> String {
        match resource {
            "cpu" => self.t(k!("resource.cpu")).to_owned(),
            "memory" => self.t(k!("resource.memory")).to_owned(),
            "ephemeral-storage" => self.t(k!("resource.storage")).to_owned(),
            other => crate::format::resource_short(other).to_owned(),
        }
    }

    /// An amount of a resource as words in the reader's language: `8 CPU`, `32 Gi memory`,
    /// `2 × a100` (`8 核`, `内存 32 Gi`, `a100 × 2` in Chinese).
    pub fn resource_amount(&self, resource: &str, q: &anteroom_shared::scheduling::Quantity) -> String {
        let amount = crate::format::quantity(self.locale(), resource, q);
        let name = self.resource_name(resource);
        let key = match crate::format::ResourceKind::of(resource) {
            crate::format::ResourceKind::Cpu => k!("resource.amountCpu"),
            crate::format::ResourceKind::Bytes => k!("resource.amountOf"),
            crate::format::ResourceKind::Count => k!("resource.amountDevices"),
        };
        self.tf(key, &[("amount", &amount), ("name", &name)])
    }
}

impl I18n {
    /// What is wrong with a field, from the API's `code` and `params` (`fieldError.<code>`,
    /// numbers written the locale's way), or its English `message` for a code this build does
    /// not know.
    pub fn field_rule(&self, code: &str, params: Option<&serde_json::Value>, message: &str) -> String {
        let Some(key) = key_named(&format!("fieldError.{code}")) else {
            return message.to_owned();
        };
        let values: Vec<(String, String)> = params
            .and_then(|p| p.as_object())
            .map(|map| {
                map.iter()
                    .map(|(name, value)| {
                        let text = match value {
                            serde_json::Value::Number(n) => n
                                .as_f64()
                                .map_or_else(|| n.to_string(), |n| crate::format::number(self.locale(), n, 0)),
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        (name.clone(), text)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let args: Vec<(&str, &str)> = values.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        fill(self.t(key), &args)
    }
}

/// Replaces each `{name}` of `text` by its value; unknown placeholders stay as written.
pub fn fill(text: &str, args: &[(&str, &str)]) -> String {
    let mut out = text.to_owned();
    for (name, value) in args {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// The I18n of the app.
pub fn use_i18n() -> I18n {
    expect_context::<I18n>()
}

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

fn browser_locale() -> Option<Locale> {
    let navigator = web_sys::window()?.navigator();
    let languages = navigator.languages();
    languages
        .iter()
        .filter_map(|v| v.as_string())
        .chain(navigator.language())
        .find_map(|tag| Locale::from_tag(&tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_tags_map_to_locales_by_their_primary_subtag() {
        assert_eq!(Locale::from_tag("zh-CN"), Some(Locale::Zh));
        assert_eq!(Locale::from_tag("ja"), Some(Locale::Ja));
        assert_eq!(Locale::from_tag("ko_KR"), Some(Locale::Ko));
        assert_eq!(Locale::from_tag("EN-gb"), Some(Locale::En));
        assert_eq!(Locale::from_tag("fr"), None);
    }

    #[test]
    fn placeholders_are_filled_by_name() {
        assert_eq!(fill("{a} of {b}, {a}", &[("a", "1"), ("b", "2")]), "1 of 2, 1");
        assert_eq!(fill("{missing}", &[]), "{missing}");
    }

    #[test]
    fn every_locale_translates_the_product_name_and_its_own_name() {
        for l in Locale::ALL {
            assert!(!lookup(l, k!("app.name")).is_empty());
            assert!(!l.native_name().is_empty());
        }
    }
}
