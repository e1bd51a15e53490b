//! The inputs every subcommand reads: JSONL files named on the command
//! line, `-` meaning standard input, and the line limit that bounds what
//! one line may cost.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::common::error::{Error, Result};

/// The name findings and messages use for standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// The line limit every subcommand that reads JSONL takes.
#[derive(Debug, clap::Args)]
pub struct LineLimit {
    /// The longest line read, in bytes (suffixes KiB, MiB, GiB accepted).
    /// A longer line is reported and skipped, never held in memory.
    #[arg(
        long,
        value_name = "BYTES",
        default_value = "4MiB",
        value_parser = parse_bytes
    )]
    pub max_line_bytes: usize,
}

/// The input arguments shared by the subcommands that read streams.
#[derive(Debug, clap::Args)]
pub struct InputArgs {
    #[command(flatten)]
    pub limit: LineLimit,

    /// JSONL files to read, one event per line; `-` reads standard input.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// The input arguments of the subcommands that read one stream.
#[derive(Debug, clap::Args)]
pub struct OneInputArgs {
    #[command(flatten)]
    pub limit: LineLimit,

    /// The JSONL file to read; `-` (the default) reads standard input.
    #[arg(value_name = "FILE", default_value = "-")]
    pub file: PathBuf,
}

/// The buffered bytes of an input.
pub type Reader = BufReader<Box<dyn Read>>;

/// How many bytes of an input are read at once.
const READ_SIZE: usize = 64 * 1024;

/// Whether `reader` holds a whole line buffered: when it does not, the
/// next line waits for a read, which on a pipe or a growing file may wait
/// for the writer. A command passing a live stream on writes out what it
/// has gathered before then.
pub fn line_ready(reader: &Reader) -> bool {
    reader.buffer().contains(&b'\n')
}

/// An opened input.
pub struct Input {
    /// The name to print: the path as given, or [`STDIN_NAME`].
    pub name: String,
    /// The bytes, buffered.
    pub reader: Reader,
    /// The length in bytes, when the input is a regular file.
    pub len: Option<u64>,
}

/// An input that cannot be read, with the path it names.
#[derive(Debug)]
pub struct InputError {
    /// The input's name as printed.
    pub name: String,
    /// What went wrong.
    pub message: String,
}

impl std::error::Error for InputError {}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.message)
    }
}

impl InputError {
    /// An I/O error met while reading the input called `name`.
    pub fn read(name: &str, error: &io::Error) -> Self {
        InputError {
            name: name.to_owned(),
            message: format!("cannot read: {}", describe(error)),
        }
    }
}

/// The name an argument is printed as.
pub fn display_name(path: &Path) -> String {
    if is_stdin(path) {
        STDIN_NAME.to_owned()
    } else {
        path.display().to_string()
    }
}

fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Says on standard error, when standard input is a terminal, that the
/// command now reads `what` from it: a person at a terminal otherwise
/// sees a command that waits without a word. Nothing is said when
/// standard input is a pipe or a file.
pub fn say_reading_stdin(what: &str) {
    use std::io::IsTerminal;
    if io::stdin().is_terminal() {
        crate::diag!("aep: reading {what} from standard input (end with Ctrl-D)");
    }
}

/// Opens `path`, or standard input for `-`. A missing file, a directory or
/// a file that cannot be opened is an [`InputError`] naming the path.
pub fn open(path: &Path) -> Result<Input, InputError> {
    let name = display_name(path);
    if is_stdin(path) {
        say_reading_stdin("events");
        return Ok(Input {
            name,
            reader: BufReader::with_capacity(READ_SIZE, Box::new(io::stdin().lock())),
            len: None,
        });
    }
    let fail = |message: String| InputError {
        name: name.clone(),
        message,
    };
    let metadata = std::fs::metadata(path).map_err(|e| fail(describe(&e)))?;
    if metadata.is_dir() {
        return Err(fail("is a directory, not a JSONL file".to_owned()));
    }
    let file = File::open(path).map_err(|e| fail(describe(&e)))?;
    let len = metadata.is_file().then_some(metadata.len());
    Ok(Input {
        name,
        reader: BufReader::with_capacity(READ_SIZE, Box::new(file)),
        len,
    })
}

/// An I/O error in words, without the `(os error N)` suffix.
fn describe(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => "no such file".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => {
            let text = error.to_string();
            match text.find(" (os error") {
                Some(at) => text[..at].to_owned(),
                None => text,
            }
        }
    }
}

/// Parses a byte count: digits with an optional `K`/`KiB`, `M`/`MiB` or
/// `G`/`GiB` suffix (powers of 1024). Zero is refused.
pub fn parse_bytes(text: &str) -> Result<usize> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let multiplier: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        other => {
            return Err(Error::msg(format_args!(
                "unknown unit `{other}` (use a number of bytes, or KiB, MiB, GiB)"
            )))
        }
    };
    let number: u64 = digits.parse().map_err(|_| {
        Error::msg(format_args!(
            "`{text}` is not a byte count such as 4194304 or 4MiB"
        ))
    })?;
    let bytes = number
        .checked_mul(multiplier)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::msg(format_args!("`{text}` is too large")))?;
    if bytes == 0 {
        return Err(Error::msg("the line limit must be at least 1 byte"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_take_binary_suffixes() {
        assert_eq!(parse_bytes("4194304").unwrap(), 4 << 20);
        assert_eq!(parse_bytes("4MiB").unwrap(), 4 << 20);
        // The command line's default is the library's.
        assert_eq!(
            parse_bytes("4MiB").unwrap(),
            aep::reader::DEFAULT_MAX_LINE_BYTES
        );
        assert_eq!(parse_bytes("512k").unwrap(), 512 << 10);
        assert_eq!(parse_bytes("1 GiB").unwrap(), 1 << 30);
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("MiB").is_err());
        assert!(parse_bytes("4 parsecs")
            .unwrap_err()
            .to_string()
            .contains("parsecs"));
        assert!(parse_bytes("99999999999999999999").is_err());
    }

    #[test]
    fn a_missing_file_and_a_directory_name_the_path() {
        let dir = std::env::temp_dir();
        let error = open(&dir).err().expect("a directory is refused");
        assert_eq!(error.name, dir.display().to_string());
        assert!(error.to_string().contains("is a directory"), "{error}");
        let missing = dir.join("aep-cli-no-such-file.jsonl");
        let error = open(&missing).err().expect("a missing file is refused");
        assert!(error.to_string().ends_with(": no such file"), "{error}");
    }
}
