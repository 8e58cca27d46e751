//! How answers are shown: aligned tables for people (wide characters count twice, so Chinese,
//! Japanese and Korean headers line up), JSON or YAML for scripts, colours only on a terminal
//! and never under `NO_COLOR`.

use std::io::IsTerminal as _;

use anteroom_shared::scheduling::JobPhase;
use chrono::{DateTime, Utc};
use unicode_width::UnicodeWidthStr as _;

/// How a command prints what it got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// An aligned table.
    Table,
    /// The table with more columns.
    Wide,
    /// The API's JSON, one document.
    Json,
    /// The API's answer as YAML.
    Yaml,
}

/// Whether colours are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours.
    pub color: bool,
}

impl Style {
    /// Colours when stdout is a terminal, `NO_COLOR` is unset or empty, and `TERM` is not `dumb`.
    pub fn detect() -> Self {
        Self::decide(
            std::io::stdout().is_terminal(),
            std::env::var("NO_COLOR").ok().as_deref(),
            std::env::var("TERM").ok().as_deref(),
        )
    }

    /// The rule behind [`Style::detect`] (<https://no-color.org>).
    pub fn decide(terminal: bool, no_color: Option<&str>, term: Option<&str>) -> Self {
        Self {
            color: terminal && no_color.is_none_or(str::is_empty) && term != Some("dumb"),
        }
    }

    /// `text` in the colour of a phase: waiting yellow, running green, failed red.
    pub fn phase(&self, phase: JobPhase, text: &str) -> String {
        let code = match phase {
            JobPhase::Prequeue | JobPhase::Activating | JobPhase::Pending => "33",
            JobPhase::Running => "32",
            JobPhase::Failed | JobPhase::Aborted | JobPhase::Preempted => "31",
            _ => "2",
        };
        self.paint(code, text)
    }

    /// `text` in bold.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// `text` in red.
    pub fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }

    /// `text` dimmed.
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// The locale key of a phase's name. `Activating` (the create in flight) reads as `Pending`,
/// as in the web UI: to its owner the job is on its way into the cluster either way.
pub fn phase_key(phase: JobPhase) -> String {
    let shown = match phase {
        JobPhase::Activating => JobPhase::Pending,
        other => other,
    };
    format!("phase.{}", shown.as_str())
}

/// A resource list as one cell, the way `--set` and `ar admin quota set` take it:
/// `cpu=8,memory=32Gi,nvidia.com/a100=1`.
pub fn resources(list: &anteroom_shared::scheduling::ResourceList) -> String {
    list.iter()
        .map(|(name, q)| format!("{name}={q}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The width a terminal gives `text`, ANSI colour sequences not counted.
pub fn width(text: &str) -> usize {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain.width()
}

/// An aligned table; the last column is not padded.
pub fn table(headers: &[String], rows: &[Vec<String>]) -> String {
    let columns = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| width(h)).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(width(cell));
        }
    }
    let mut out = String::new();
    for row in std::iter::once(headers).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate().take(columns) {
            line.push_str(cell);
            if i + 1 < columns {
                line.push_str(&" ".repeat(widths[i] - width(cell) + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A span of time as a person reads it: `45s`, `3m12s`, `2h05m`, `3d04h`.
pub fn duration(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86400, s % 86400 / 3600),
    }
}

/// A time in the local zone, to the second, with its offset (`2026-11-26 14:03:07 +09:00`).
pub fn local_time(at: DateTime<Utc>) -> String {
    at.with_timezone(&chrono::Local)
        .format("%Y-%m-%d %H:%M:%S %:z")
        .to_string()
}

/// A fraction as a bar of `cells` cells, `█` for the used part, `▒` for this job's request
/// and `░` for what stays free; over 1 the bar is full and the caller says so.
pub fn bar(used: f64, request: f64, limit: f64, cells: usize) -> String {
    if limit <= 0.0 || !limit.is_finite() {
        return "▒".repeat(cells);
    }
    let cell = |v: f64| ((v / limit) * cells as f64).round().clamp(0.0, cells as f64) as usize;
    let used_cells = cell(used);
    let with_request = cell(used + request).max(used_cells);
    format!(
        "{}{}{}",
        "█".repeat(used_cells),
        "▒".repeat(with_request - used_cells),
        "░".repeat(cells - with_request)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(Style::decide(true, None, Some("xterm")).color);
        assert!(Style::decide(true, Some(""), None).color);
        assert!(!Style::decide(true, Some("1"), None).color);
        assert!(!Style::decide(false, None, None).color);
        assert!(!Style::decide(true, None, Some("dumb")).color);
        let plain = Style { color: false };
        assert_eq!(plain.phase(JobPhase::Running, "Running"), "Running");
        let colour = Style { color: true };
        assert_eq!(width(&colour.phase(JobPhase::Running, "Running")), 7);
    }

    /// Every phase, schedule type and kind `ar` may print has its name in all four languages
    /// (the keys are built at run time, so the compile-time check of the UI does not see them).
    #[test]
    fn every_name_ar_prints_has_a_text_in_every_language() {
        use anteroom_shared::scheduling::{JobKind, ScheduleType};
        let mut keys: Vec<String> = JobPhase::ALL.iter().map(|p| phase_key(*p)).collect();
        keys.extend(ScheduleType::ALL.iter().map(|t| format!("scheduleType.{}", t.as_str())));
        keys.extend(JobKind::ALL.iter().map(|k| format!("kind.{}", k.as_str())));
        for locale in crate::i18n::LOCALES {
            for key in &keys {
                assert!(crate::i18n::I18n::new(locale).lookup(key).is_some(), "{locale}: {key}");
            }
        }
    }

    #[test]
    fn wide_characters_line_up() {
        let out = table(
            &["名前".into(), "ID".into()],
            &[vec!["ab".into(), "1".into()], vec!["作業".into(), "22".into()]],
        );
        let lines: Vec<_> = out.lines().collect();
        assert_eq!(lines, ["名前  ID", "ab    1", "作業  22"]);
    }

    #[test]
    fn durations_read_like_a_person_writes_them() {
        assert_eq!(duration(-3), "0s");
        assert_eq!(duration(45), "45s");
        assert_eq!(duration(192), "3m12s");
        assert_eq!(duration(7500), "2h05m");
        assert_eq!(duration(273_600), "3d04h");
    }

    #[test]
    fn bars_show_used_request_and_free() {
        assert_eq!(bar(2.0, 1.0, 4.0, 8), "████▒▒░░");
        assert_eq!(bar(3.0, 2.0, 4.0, 8), "██████▒▒");
        assert_eq!(bar(0.0, 0.0, 4.0, 4), "░░░░");
        assert_eq!(bar(1.0, 1.0, 0.0, 3), "▒▒▒");
    }
}
