//! A followed log as the reader sees it, kept across dropped connections. The API's stream
//! (`follow=true&tailLines=N`) starts each connection with the log's last `N` lines, then sends
//! what the pod writes next. A first connection shows all of it; a connection after a drop (or
//! after the page was drawn again) starts with lines the reader already has: they are matched
//! against the end of what is shown and only what follows them is added, so a drop of fewer
//! than `N` lines loses nothing. Where repeated lines leave the place ambiguous, the shortest
//! overlap is taken (some lines may show twice, never one lost) and the spot is marked; when
//! nothing matches (more than `N` lines were written during the drop) a gap is marked, never
//! papered over. A carriage return starts its line over, as on a terminal (progress bars).
//!
//! Pure: bytes in, lines out; the page feeds it and draws it.

use std::collections::VecDeque;

/// What a reconnection is matching: the lines it sent so far, and where they may start in
/// what is shown (the first line of the tail is one of these positions).
#[derive(Clone, Debug, PartialEq)]
struct Resume {
    /// Complete lines the new connection sent, not shown yet.
    incoming: Vec<String>,
    /// Positions in `lines` where the tail may begin, consistent with `incoming` so far.
    candidates: Vec<usize>,
}

/// The lines of a followed log, at most `cap` of them (the oldest go first, counted).
#[derive(Clone, Debug, PartialEq)]
pub struct FollowedLog {
    lines: VecDeque<String>,
    /// Bytes after the last newline: a line still being written.
    partial: Vec<u8>,
    /// Lines dropped from the start to keep at most `cap`.
    dropped: u64,
    /// Gaps marked: reconnections that found none of their tail in what is shown.
    gaps: u32,
    /// Complete log lines received and shown (markers not counted).
    received: u64,
    /// A reconnection took up at an ambiguous place: the next line comes after a mark.
    mark_next: bool,
    /// The most lines kept.
    cap: usize,
    /// The tail a connection starts with (`tailLines`).
    tail: usize,
    resume: Option<Resume>,
}

/// The line a gap is drawn as (the page translates it; the text is never a log line's, as
/// a log line never contains a NUL).
pub const GAP_LINE: &str = "\u{0}gap";

/// The line drawn where a reconnection could not tell exactly where it took up (the lines
/// after it may repeat some before it).
pub const REPEAT_LINE: &str = "\u{0}repeat";

/// The most bytes kept of a line still being written (a progress bar that never ends its line
/// keeps its latest part).
const PARTIAL_CAP: usize = 64 * 1024;

/// A line as a terminal shows it: a carriage return starts it over (`\r\n` ends it).
fn as_shown(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match line.iter().rposition(|&b| b == b'\r') {
        Some(at) => &line[at + 1..],
        None => line,
    }
}

impl FollowedLog {
    /// An empty log that keeps at most `cap` lines, followed with connections that start with
    /// the last `tail` lines.
    pub fn new(cap: usize, tail: usize) -> Self {
        FollowedLog {
            lines: VecDeque::new(),
            partial: Vec::new(),
            dropped: 0,
            gaps: 0,
            received: 0,
            mark_next: false,
            cap: cap.max(1),
            tail,
            resume: None,
        }
    }

    /// A new connection begins: if lines are shown already, what it sends first is matched
    /// against them. A line cut by the drop is dropped (the tail carries it whole).
    pub fn reconnect(&mut self) {
        self.partial.clear();
        self.resume = (!self.lines.is_empty()).then(|| Resume {
            incoming: Vec::new(),
            candidates: (self.lines.len().saturating_sub(self.tail)..self.lines.len()).collect(),
        });
    }

    /// Bytes the connection sent.
    pub fn push(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            self.partial.extend_from_slice(&rest[..at]);
            let line = String::from_utf8_lossy(as_shown(&self.partial)).into_owned();
            self.partial.clear();
            self.line(line);
            rest = &rest[at + 1..];
        }
        self.partial.extend_from_slice(rest);
        // What a terminal would show of the line so far (a trailing `\r` may be a `\r\n`
        // cut in two: kept), at most its last [`PARTIAL_CAP`] bytes.
        let end = self.partial.len() - usize::from(self.partial.last() == Some(&b'\r'));
        if let Some(at) = self.partial[..end].iter().rposition(|&b| b == b'\r') {
            self.partial.drain(..=at);
        }
        if self.partial.len() > PARTIAL_CAP {
            let cut = self.partial.len() - PARTIAL_CAP;
            self.partial.drain(..cut);
        }
    }

    fn line(&mut self, line: String) {
        let Some(resume) = self.resume.as_mut() else {
            self.fresh(line);
            return;
        };
        let at = resume.incoming.len();
        resume.incoming.push(line);
        let lines = &self.lines;
        let incoming = &resume.incoming;
        // A candidate stays while the tail so far equals the shown lines from it on.
        resume
            .candidates
            .retain(|&p| p + at >= lines.len() || lines[p + at] == incoming[at]);
        // The latest candidate (the shortest overlap) once its shown lines are all matched:
        // taking an earlier one would drop the lines between if it were the wrong one.
        let latest = resume.candidates.last().copied();
        if let Some(p) = latest
            && p + at + 1 >= lines.len()
        {
            let ambiguous = resume.candidates.len() > 1;
            let overlap = lines.len() - p;
            let resume = self.resume.take().expect("resuming");
            self.mark_next = ambiguous;
            for line in resume.incoming.into_iter().skip(overlap) {
                self.fresh(line);
            }
        } else if resume.candidates.is_empty() {
            let resume = self.resume.take().expect("resuming");
            self.gaps += 1;
            self.append(GAP_LINE.to_owned());
            for line in resume.incoming {
                self.fresh(line);
            }
        }
    }

    /// A line the reader has not seen.
    fn fresh(&mut self, line: String) {
        if std::mem::take(&mut self.mark_next) {
            self.append(REPEAT_LINE.to_owned());
        }
        self.received += 1;
        self.append(line);
    }

    fn append(&mut self, line: String) {
        self.lines.push_back(line);
        if self.lines.len() > self.cap {
            self.lines.pop_front();
            self.dropped += 1;
        }
    }

    /// How many lines show: the complete ones, and the one being written (not while a
    /// reconnection is still matching: its lines are already shown).
    pub fn len(&self) -> usize {
        self.lines.len() + usize::from(self.writing())
    }

    /// Whether nothing shows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn writing(&self) -> bool {
        self.resume.is_none() && !self.partial.is_empty()
    }

    /// The lines `first..last` of those that show (the viewer draws only those in view).
    pub fn window(&self, first: usize, last: usize) -> Vec<String> {
        let last = last.min(self.len());
        (first.min(last)..last)
            .map(|i| match self.lines.get(i) {
                Some(line) => line.clone(),
                None => String::from_utf8_lossy(as_shown(&self.partial)).into_owned(),
            })
            .collect()
    }

    /// Every line that shows.
    #[cfg(test)]
    pub fn shown(&self) -> Vec<String> {
        self.window(0, self.len())
    }

    /// Complete lines received and shown so far (a reconnection's repeated tail not counted):
    /// whether a connection brought anything new.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Lines dropped from the start (beyond the cap): the download has them.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Gaps marked (reconnections after more than `tail` new lines).
    #[cfg(test)]
    pub fn gaps(&self) -> u32 {
        self.gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: std::ops::Range<u32>) -> String {
        lines.map(|i| format!("line {i}\n")).collect()
    }

    fn numbered(lines: std::ops::Range<u32>) -> Vec<String> {
        lines.map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn a_first_connection_shows_everything_and_a_line_split_across_chunks_once() {
        let mut log = FollowedLog::new(100, 10);
        log.push(b"one\ntw");
        assert_eq!(log.shown(), ["one", "tw"], "the line being written shows");
        log.push("o\n\u{e9}t\u{e9}\n".as_bytes());
        assert_eq!(log.shown(), ["one", "two", "\u{e9}t\u{e9}"]);
        // A multi-byte letter cut between two chunks is whole once its line ends.
        let mut log = FollowedLog::new(100, 10);
        let bytes = "\u{e9}\n".as_bytes();
        log.push(&bytes[..1]);
        log.push(&bytes[1..]);
        assert_eq!(log.shown(), ["\u{e9}"]);
    }

    #[test]
    fn a_reconnection_adds_only_what_follows_what_is_shown() {
        // 25 lines shown; during the drop 3 more were written; the tail is the last 10.
        let mut log = FollowedLog::new(100, 10);
        log.push(text(0..25).as_bytes());
        log.reconnect();
        log.push(text(18..28).as_bytes());
        assert_eq!(log.shown(), numbered(0..28));
        assert_eq!(log.gaps(), 0);
        // Then it follows as before.
        log.push(text(28..30).as_bytes());
        assert_eq!(log.shown(), numbered(0..30));
    }

    #[test]
    fn a_reconnection_to_an_unchanged_log_shows_nothing_twice_and_waits_for_the_next_line() {
        let mut log = FollowedLog::new(100, 10);
        log.push(text(0..5).as_bytes());
        log.reconnect();
        log.push(text(0..5).as_bytes());
        assert_eq!(log.shown(), numbered(0..5));
        log.push(b"line 5\n");
        assert_eq!(log.shown(), numbered(0..6));
    }

    #[test]
    fn a_reconnection_in_small_chunks_and_a_cut_line_match_the_same() {
        let mut log = FollowedLog::new(100, 10);
        log.push(text(0..20).as_bytes());
        log.push(b"line 2"); // the drop cut "line 20" in half
        log.reconnect();
        for b in text(12..23).bytes() {
            log.push(&[b]);
        }
        assert_eq!(log.shown(), numbered(0..23));
    }

    #[test]
    fn more_lines_than_the_tail_during_a_drop_mark_a_gap() {
        let mut log = FollowedLog::new(100, 10);
        log.push(text(0..20).as_bytes());
        log.reconnect();
        log.push(text(40..50).as_bytes());
        let mut expected = numbered(0..20);
        expected.push(GAP_LINE.into());
        expected.extend(numbered(40..50));
        assert_eq!(log.shown(), expected);
        assert_eq!(log.gaps(), 1);
    }

    #[test]
    fn repeated_lines_never_lose_a_line_and_mark_where_some_may_repeat() {
        // "x a b a b" shown; during the drop "a b" again; the tail of 4 is "a b a b": it may
        // start at the first or the second "a". Taking the first would drop the new "a b".
        let mut log = FollowedLog::new(100, 4);
        log.push(b"x\na\nb\na\nb\n");
        log.reconnect();
        log.push(b"a\nb\na\nb\n");
        assert_eq!(log.shown(), ["x", "a", "b", "a", "b", REPEAT_LINE, "a", "b"]);
        // Unambiguous: no mark.
        let mut log = FollowedLog::new(100, 4);
        log.push(b"start\ntick 1\ntick 2\n");
        log.reconnect();
        log.push(b"start\ntick 1\ntick 2\ntick 3\n");
        assert_eq!(log.shown(), ["start", "tick 1", "tick 2", "tick 3"]);
    }

    #[test]
    fn a_carriage_return_starts_the_line_over_and_a_reconnection_counts_only_new_lines() {
        let mut log = FollowedLog::new(100, 10);
        log.push(b"10%\r20%");
        assert_eq!(log.shown(), ["20%"]);
        log.push(b"\r30%\r");
        assert_eq!(log.shown(), ["30%"], "a trailing CR may be half of a CR LF: it waits");
        log.push(b"\n");
        assert_eq!(log.shown(), ["30%"], "CR LF ends the line");
        log.push(b"done\r\n");
        assert_eq!(log.shown(), ["30%", "done"]);
        assert_eq!(log.received(), 2);
        // The same tail again, with the unfinished progress line: nothing new received.
        log.push(b"40%");
        log.reconnect();
        log.push(b"30%\ndone\n50%");
        assert_eq!(log.received(), 2, "the tail again is nothing new");
        assert_eq!(log.shown(), ["30%", "done", "50%"]);
    }

    #[test]
    fn a_line_that_never_ends_keeps_only_its_latest_part() {
        let mut log = FollowedLog::new(100, 10);
        for _ in 0..100 {
            log.push(&[b'#'; 4096]);
        }
        assert_eq!(log.window(0, 1)[0].len(), PARTIAL_CAP);
    }

    #[test]
    fn a_window_is_a_part_of_what_shows_the_line_being_written_included() {
        let mut log = FollowedLog::new(100, 10);
        log.push(b"a\nb\nc");
        assert_eq!(log.len(), 3);
        assert_eq!(log.window(1, 3), ["b", "c"]);
        assert_eq!(log.window(2, 99), ["c"]);
        assert_eq!(log.window(5, 2), Vec::<String>::new());
        log.reconnect();
        assert_eq!(log.len(), 2, "a cut line is dropped on a reconnection");
        assert!(!log.is_empty());
    }

    #[test]
    fn the_oldest_lines_go_beyond_the_cap_and_are_counted() {
        let mut log = FollowedLog::new(5, 3);
        log.push(text(0..8).as_bytes());
        assert_eq!(log.shown(), numbered(3..8));
        assert_eq!(log.dropped(), 3);
        log.reconnect();
        log.push(text(6..9).as_bytes());
        assert_eq!(log.shown(), numbered(4..9));
        assert_eq!(log.dropped(), 4);
    }
}
