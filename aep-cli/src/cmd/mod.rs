//! One module per subcommand; each has its `Args` (clap) and a `run`
//! that returns the exit [`Status`]. What several subcommands share lives
//! outside, in `crate::common` and `crate::live`.

pub mod adapter;
pub mod cancel;
pub mod convert;
pub mod demo;
pub mod doctor;
pub mod emit;
pub mod filter;
pub mod hook;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod pending;
pub mod post;
pub mod project;
pub mod redact;
pub mod relay;
pub mod replay;
pub mod respond;
pub mod sessions;
pub mod sink;
pub mod tail;
pub mod timeline;
pub mod validate;

/// How a command ended: the process exit status. Every subcommand's `run`
/// returns one and `main` exits with its [`code`](Status::code); no
/// subcommand exits on its own. Each subcommand's `--help` says which of
/// these it gives and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// 0: nothing wrong (the input is clean, the output written, the
    /// command accepted).
    Clean,
    /// 1: the input has errors (findings, violations, refused lines), or
    /// an answer the request cannot take.
    Findings,
    /// 2: a usage error, an input that cannot be read, a relay that cannot
    /// be reached.
    Failure,
    /// 3 (`respond --relay`, `cancel`): the command was nacked, by its
    /// target or by the relay on its behalf.
    Nacked,
    /// 4 (`respond --relay`, `cancel`): no ack within the window after the
    /// last attempt.
    TimedOut,
    /// 130 (`respond`): the person cancelled at a prompt (128 + SIGINT, as
    /// shells report it).
    Cancelled,
}

impl Status {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Status::Clean => 0,
            Status::Findings => 1,
            Status::Failure => 2,
            Status::Nacked => 3,
            Status::TimedOut => 4,
            Status::Cancelled => 130,
        }
    }
}
