//! What is wrong with a field's value, as every check says it: a stable code that clients
//! translate (the web UI's `fieldError.<code>`, with its parameters), and the English text for
//! everyone else. Domain checks (job bodies, queue and resource names) return these; the HTTP
//! layer puts them into a 422's `fields`.

use serde_json::Value;

/// What is wrong with a value, said for every audience at once: a stable code clients
/// translate, its parameters, and the English text. Checks return these so that a refusal
/// reads in the user's language, not only in the server's; a bare English text converts into
/// one with the code `invalid`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Stable camelCase code (`lengthBetween`).
    pub code: &'static str,
    /// English text.
    pub message: std::borrow::Cow<'static, str>,
    /// The values the text names.
    pub params: Option<Value>,
}

impl Rule {
    /// "must be `min` to `max` characters".
    pub fn length_between(min: usize, max: usize) -> Rule {
        Rule::with(
            "lengthBetween",
            format!("must be {min} to {max} characters"),
            serde_json::json!({ "min": min, "max": max }),
        )
    }

    /// A rule whose text names no value.
    pub const fn fixed(code: &'static str, message: &'static str) -> Self {
        Self {
            code,
            message: std::borrow::Cow::Borrowed(message),
            params: None,
        }
    }

    /// A rule whose English text is made at run time but whose translation names no value.
    pub fn coded(code: &'static str, message: impl Into<std::borrow::Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
            params: None,
        }
    }

    /// A rule whose text names values (`params`, also written into `message`).
    pub fn with(code: &'static str, message: impl Into<std::borrow::Cow<'static, str>>, params: Value) -> Self {
        Self {
            code,
            message: message.into(),
            params: Some(params),
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The code of a rule only its English text says (`invalid`).
pub const INVALID: &str = "invalid";

impl From<&'static str> for Rule {
    fn from(message: &'static str) -> Self {
        Rule::fixed(INVALID, message)
    }
}

impl From<String> for Rule {
    fn from(message: String) -> Self {
        Rule {
            code: INVALID,
            message: message.into(),
            params: None,
        }
    }
}
