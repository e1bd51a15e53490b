//! Progress on standard error for long reads.
//!
//! Shown only when standard error is a terminal, and only for big inputs:
//! a file longer than [`THRESHOLD`] gets a bar from the start; an input of
//! unknown length (standard input, a pipe) gets a byte counter once
//! [`THRESHOLD`] bytes have been read. Piped or redirected standard error
//! never receives a progress byte.

use std::cell::OnceCell;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inputs smaller than this finish before a bar would help.
pub const THRESHOLD: u64 = 8 * 1024 * 1024;

/// Positions are pushed to the bar at most every this many bytes, so the
/// per-line cost stays a comparison.
const STEP: u64 = 256 * 1024;

/// The progress of reading one input.
pub struct Progress {
    enabled: bool,
    name: String,
    len: Option<u64>,
    bar: OnceCell<ProgressBar>,
    shown_at: std::cell::Cell<u64>,
}

impl Progress {
    /// Progress for the input `name` of `len` bytes (when known); inert
    /// unless standard error is a terminal.
    pub fn new(name: &str, len: Option<u64>) -> Self {
        Progress::with_terminal(std::io::stderr().is_terminal(), name, len)
    }

    fn with_terminal(enabled: bool, name: &str, len: Option<u64>) -> Self {
        let progress = Progress {
            enabled,
            name: name.to_owned(),
            len,
            bar: OnceCell::new(),
            shown_at: std::cell::Cell::new(0),
        };
        if len.is_some_and(|len| len > THRESHOLD) {
            progress.start(0);
        }
        progress
    }

    /// Shows the bar, at `position` bytes already read.
    fn start(&self, position: u64) -> Option<&ProgressBar> {
        if !self.enabled {
            return None;
        }
        Some(self.bar.get_or_init(|| {
            let (bar, template) = match self.len {
                Some(len) => (
                    ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden()),
                    "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                ),
                None => (
                    ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()),
                    "{msg} {spinner} {bytes} {bytes_per_sec}",
                ),
            };
            let style = ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_message(self.name.clone());
            // A bar that appears late starts where reading is, with a rate
            // measured from then on rather than a jump read as a burst; it
            // is drawn only once set up.
            bar.set_position(position);
            bar.reset_eta();
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        }))
    }

    /// Records that `bytes` bytes of the input have been read.
    pub fn update(&self, bytes: u64) {
        if !self.enabled {
            return;
        }
        let bar = match self.bar.get() {
            Some(bar) if bytes >= self.shown_at.get() + STEP => bar,
            None if bytes >= THRESHOLD => match self.start(bytes) {
                Some(bar) => bar,
                None => return,
            },
            _ => return,
        };
        self.shown_at.set(bytes);
        bar.set_position(bytes);
    }

    /// Runs `f` with the bar hidden, so that lines written meanwhile to
    /// the same terminal do not tear it.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.bar.get() {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Whether a bar is on screen.
    #[cfg(test)]
    fn is_visible(&self) -> bool {
        self.bar.get().is_some()
    }

    /// Removes the bar.
    pub fn finish(self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_drawn_off_a_terminal() {
        let progress = Progress::with_terminal(false, "big.jsonl", Some(1 << 30));
        progress.update(THRESHOLD * 2);
        assert!(!progress.is_visible());
    }

    #[test]
    fn a_bar_appears_for_big_files_and_late_for_unknown_lengths() {
        let file = Progress::with_terminal(true, "big.jsonl", Some(THRESHOLD + 1));
        assert!(file.is_visible());
        file.finish();
        let small = Progress::with_terminal(true, "small.jsonl", Some(1000));
        small.update(1000);
        assert!(!small.is_visible());
        let piped = Progress::with_terminal(true, "<stdin>", None);
        piped.update(THRESHOLD - 1);
        assert!(!piped.is_visible());
        piped.update(THRESHOLD);
        assert!(piped.is_visible());
        piped.finish();
    }
}
