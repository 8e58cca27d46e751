//! The colour theme. It follows the system's light or dark preference unless the user picked
//! one; the choice is kept in `localStorage` under [`STORAGE_KEY`]. `theme.js` (loaded before
//! the stylesheet, see xtask) applies the same rule before the first paint and again when the
//! system's preference changes, so no page flashes white in the dark; this module applies it
//! when the user switches.

/// Where the choice is kept; `theme.js` reads the same key.
pub const STORAGE_KEY: &str = "anteroom.theme";

/// What the user chose in the header's switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThemeChoice {
    /// Follow the operating system's preference (the default).
    System,
    /// Always light.
    Light,
    /// Always dark.
    Dark,
}

impl ThemeChoice {
    /// Every choice, in the switch's order.
    pub const ALL: [ThemeChoice; 3] = [ThemeChoice::System, ThemeChoice::Light, ThemeChoice::Dark];

    /// The stored and `<option>` value.
    pub fn code(self) -> &'static str {
        match self {
            ThemeChoice::System => "system",
            ThemeChoice::Light => "light",
            ThemeChoice::Dark => "dark",
        }
    }

    /// The choice a stored value names; anything else (nothing, an old value) is `System`.
    pub fn from_code(code: &str) -> Self {
        match code {
            "light" => ThemeChoice::Light,
            "dark" => ThemeChoice::Dark,
            _ => ThemeChoice::System,
        }
    }

    /// Whether the page is dark under this choice when the system prefers dark or not.
    pub fn is_dark(self, system_prefers_dark: bool) -> bool {
        match self {
            ThemeChoice::System => system_prefers_dark,
            ThemeChoice::Light => false,
            ThemeChoice::Dark => true,
        }
    }
}

/// The choice saved in this browser.
pub fn saved() -> ThemeChoice {
    storage()
        .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
        .map_or(ThemeChoice::System, |c| ThemeChoice::from_code(&c))
}

/// Remembers `choice` and applies it at once.
pub fn choose(choice: ThemeChoice) {
    if let Some(s) = storage() {
        let _ = match choice {
            ThemeChoice::System => s.remove_item(STORAGE_KEY),
            other => s.set_item(STORAGE_KEY, other.code()),
        };
    }
    let Some(window) = web_sys::window() else { return };
    let system_dark = window
        .match_media("(prefers-color-scheme: dark)")
        .ok()
        .flatten()
        .is_some_and(|q| q.matches());
    if let Some(root) = window.document().and_then(|d| d.document_element()) {
        root.set_class_name(if choice.is_dark(system_dark) { "dark" } else { "" });
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_survives_its_stored_code_and_unknown_codes_follow_the_system() {
        for c in ThemeChoice::ALL {
            assert_eq!(ThemeChoice::from_code(c.code()), c);
        }
        assert_eq!(ThemeChoice::from_code(""), ThemeChoice::System);
        assert_eq!(ThemeChoice::from_code("Dark"), ThemeChoice::System);
    }

    #[test]
    fn only_system_follows_the_system() {
        assert!(ThemeChoice::System.is_dark(true));
        assert!(!ThemeChoice::System.is_dark(false));
        assert!(ThemeChoice::Dark.is_dark(false));
        assert!(!ThemeChoice::Light.is_dark(true));
    }
}
