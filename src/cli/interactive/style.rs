//! Colour, decided once: only on a terminal, never when `NO_COLOR` is set (unless
//! `--color always` asks for it), and never with `--color never`.
//!
//! Everything the interactive screen and `dshq watch` print goes through [`Style`], so
//! turning colour off removes every escape sequence from text (the prompts of
//! [`super::keys`] paint with it too).

use std::io::IsTerminal;

use crossterm::style::Stylize;

/// The global `--color` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when writing to a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always colour (even into a pipe, even with `NO_COLOR`).
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether to colour a stream that `is_terminal` (or not), given the environment.
    pub fn enabled(self, is_terminal: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_terminal && !no_color_env(),
        }
    }

    /// The style for stdout.
    pub fn for_stdout(self) -> Style {
        self.style(std::io::stdout().is_terminal())
    }

    /// The style for stderr (where the interactive screen draws its prompts).
    pub fn for_stderr(self) -> Style {
        self.style(std::io::stderr().is_terminal())
    }

    fn style(self, is_terminal: bool) -> Style {
        let color = self.enabled(is_terminal);
        // crossterm (under our painting) reads NO_COLOR by itself; make
        // it agree with the decision, so `--color always` wins over NO_COLOR.
        crossterm::style::force_color_output(color);
        Style { color }
    }
}

/// `NO_COLOR` set to anything but the empty string (<https://no-color.org>).
fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// How text is painted: with ANSI colour or as plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Whether escape sequences are written at all.
    pub color: bool,
}

impl Style {
    /// Plain text, no escape sequences.
    pub const PLAIN: Style = Style { color: false };

    /// Bold.
    pub fn bold(&self, s: &str) -> String {
        if self.color {
            s.bold().to_string()
        } else {
            s.to_string()
        }
    }

    /// Dimmed (secondary information).
    pub fn dim(&self, s: &str) -> String {
        if self.color {
            s.dark_grey().to_string()
        } else {
            s.to_string()
        }
    }

    /// A heading.
    pub fn heading(&self, s: &str) -> String {
        if self.color {
            s.bold().cyan().to_string()
        } else {
            s.to_string()
        }
    }

    /// Something to notice (an id, a label).
    pub fn accent(&self, s: &str) -> String {
        if self.color {
            s.yellow().to_string()
        } else {
            s.to_string()
        }
    }

    /// Success.
    pub fn ok(&self, s: &str) -> String {
        if self.color {
            s.green().to_string()
        } else {
            s.to_string()
        }
    }

    /// A warning or a failure.
    pub fn warn(&self, s: &str) -> String {
        if self.color {
            s.red().to_string()
        } else {
            s.to_string()
        }
    }

    /// Inline code.
    pub fn code(&self, s: &str) -> String {
        if self.color {
            s.magenta().to_string()
        } else {
            s.to_string()
        }
    }
}

/// Request text made safe to print on one line (see [`crate::text::one_line`]).
pub fn one_line(s: &str) -> String {
    crate::text::one_line(s).into_owned()
}

/// Request text made safe to print over several lines (see [`crate::text::multi_line`]).
pub fn multi_line(s: &str) -> String {
    crate::text::multi_line(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(one_line("a\nb\u{1b}[2Jc"), "a b\\x1b[2Jc");
        assert_eq!(multi_line("a\r\nb\u{7}"), "a\nb\\x07");
    }

    #[test]
    fn never_and_always_override_the_terminal() {
        assert!(!ColorChoice::Never.enabled(true));
        assert!(ColorChoice::Always.enabled(false));
    }

    #[test]
    fn plain_style_writes_no_escapes() {
        let s = Style::PLAIN;
        for t in [s.bold("x"), s.dim("x"), s.heading("x"), s.code("x")] {
            assert_eq!(t, "x");
        }
        assert!(Style { color: true }.bold("x").contains('\u{1b}'));
    }
}
