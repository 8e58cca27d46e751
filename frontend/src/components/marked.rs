//! Values that are data inside a translated sentence — an object's name, a Kubernetes reason
//! word people search for as written — drawn in `translate="no"` spans: a page translator
//! leaves them alone, and the stray-English check of the tests can tell them from a word the
//! translation forgot.

use leptos::prelude::*;

/// `text` cut into runs, each `true` when it is one of `data` (the earliest match, the longest
/// of those starting there; empty data ignored).
pub fn runs(text: &str, data: &[String]) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut plain = String::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let found = data
            .iter()
            .filter(|d| !d.is_empty() && rest.starts_with(d.as_str()))
            .max_by_key(|d| d.len());
        match found {
            Some(d) => {
                if !plain.is_empty() {
                    out.push((std::mem::take(&mut plain), false));
                }
                out.push((d.clone(), true));
                at += d.len();
            }
            None => {
                let c = rest.chars().next().expect("not at the end");
                plain.push(c);
                at += c.len_utf8();
            }
        }
    }
    if !plain.is_empty() {
        out.push((plain, false));
    }
    out
}

/// `text` with each of `data` in it marked as data (see the module).
#[component]
pub fn Marked(
    /// The sentence, already translated.
    #[prop(into)]
    text: Signal<String>,
    /// The values in it that are data.
    data: Vec<String>,
) -> impl IntoView {
    move || {
        runs(&text.get(), &data)
            .into_iter()
            .map(|(run, is_data)| {
                if is_data {
                    view! { <span translate="no">{run}</span> }.into_any()
                } else {
                    run.into_any()
                }
            })
            .collect_view()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_cut_out_of_the_sentence_longest_first() {
        let data = vec![
            "Error".to_owned(),
            "ar-7".to_owned(),
            "ar-7-main-0".to_owned(),
            String::new(),
        ];
        assert_eq!(
            runs("原因：Error，退出码 3（ar-7-main-0）", &data),
            [
                ("原因：".to_owned(), false),
                ("Error".to_owned(), true),
                ("，退出码 3（".to_owned(), false),
                ("ar-7-main-0".to_owned(), true),
                ("）".to_owned(), false),
            ]
        );
        assert_eq!(runs("", &data), []);
        assert_eq!(runs("no data", &[]), [("no data".to_owned(), false)]);
    }
}
