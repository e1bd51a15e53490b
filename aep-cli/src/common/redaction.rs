//! The AEP-0003 §9.4 redaction pipeline's settings, as `aep redact`,
//! `aep emit`, `aep adapter map`, `aep respond` and `aep cancel` take
//! them on the command line.

use aep::redact::{Options, Redactor};

/// The pipeline's settings (`--home`, `--secret`, `--secret-env`,
/// `--no-pii`).
#[derive(Debug, Clone, clap::Args)]
pub struct PipelineArgs {
    /// The home directory to replace with `~` (default: $HOME; an empty
    /// value turns it off, and `/` is never one). Every /home/NAME,
    /// /Users/NAME and C:\Users\NAME prefix is replaced anyway.
    #[arg(long, value_name = "DIR")]
    pub home: Option<String>,

    /// A value to redact wherever it occurs (repeatable). It shows in the
    /// process list: prefer --secret-env.
    #[arg(long, value_name = "VALUE")]
    pub secret: Vec<String>,

    /// The name of an environment variable whose value is redacted wherever
    /// it occurs (repeatable); an unset or empty variable is ignored.
    #[arg(long, value_name = "NAME")]
    pub secret_env: Vec<String>,

    /// Leave emails and phone numbers alone.
    #[arg(long)]
    pub no_pii: bool,
}

impl PipelineArgs {
    /// The pipeline these arguments ask for.
    pub fn redactor(&self) -> Redactor {
        let mut options = Options::default().pii(!self.no_pii);
        options.home = self.home.clone().or_else(user_home);
        options.secrets = self.secret.clone();
        options
            .secrets
            .extend(self.secret_env.iter().filter_map(|n| std::env::var(n).ok()));
        Redactor::new(options)
    }
}

/// The user's home directory: `$HOME` (`%USERPROFILE%` on Windows when
/// `HOME` is unset). The pipeline ignores an empty value and a root.
fn user_home() -> Option<String> {
    let home = std::env::var("HOME").ok();
    let home = if cfg!(windows) {
        home.or_else(|| std::env::var("USERPROFILE").ok())
    } else {
        home
    };
    home.filter(|h| !h.is_empty())
}
