//! The JSONL binding (AEP-0003 §3.1): one event per line, appended to a
//! file with **one `write` call per line** so a concurrent `tail -f`
//! never sees a torn event. The file is opened in append mode, so
//! several writers (processes included) interleave whole lines.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aep::Severity;

use crate::error::{Cause, Error};
use crate::transport::{Flushed, Transport};

/// An append-only JSONL file.
///
/// ```
/// # fn main() -> Result<(), aep_client::Error> {
/// use aep_client::jsonl::JsonlFile;
///
/// let dir = std::env::temp_dir().join(format!("aep-jsonl-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("s1.jsonl");
/// let file = JsonlFile::open(&path)?.fsync(true);
/// file.write_line(r#"{"aep":"0.1"}"#)?;
/// assert!(file.write_line("two\nlines").is_err());
/// assert_eq!(std::fs::read_to_string(&path)?, "{\"aep\":\"0.1\"}\n");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct JsonlFile {
    file: Arc<Mutex<File>>,
    path: PathBuf,
    fsync: bool,
}

impl JsonlFile {
    /// Opens `path` for appending, creating it when absent (not its
    /// directory).
    pub fn open(path: impl AsRef<Path>) -> Result<JsonlFile, Error> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::Io(Cause::with_source(format!("{}: {e}", path.display()), e)))?;
        Ok(JsonlFile {
            file: Arc::new(Mutex::new(file)),
            path,
            fsync: false,
        })
    }

    /// Whether each line is `fsync`ed before the write returns (default
    /// no: the kernel flushes when it will).
    pub fn fsync(mut self, every_line: bool) -> JsonlFile {
        self.fsync = every_line;
        self
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `line` and a newline in one `write` call. A line holding a
    /// line break is refused (it would become two lines); a short write is
    /// an error naming the file.
    pub fn write_line(&self, line: &str) -> Result<(), Error> {
        if line.contains(['\n', '\r']) {
            return Err(Error::Invalid(
                "a JSONL line cannot hold a line break".into(),
            ));
        }
        let mut buffer = Vec::with_capacity(line.len() + 1);
        buffer.extend_from_slice(line.as_bytes());
        buffer.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let written = file.write(&buffer).map_err(|e| {
            Error::Io(Cause::with_source(
                format!("{}: {e}", self.path.display()),
                e,
            ))
        })?;
        if written != buffer.len() {
            return Err(Error::Io(
                format!(
                    "{}: short write ({written} of {} bytes): the last line is torn",
                    self.path.display(),
                    buffer.len()
                )
                .into(),
            ));
        }
        if self.fsync {
            file.sync_data().map_err(|e| {
                Error::Io(Cause::with_source(
                    format!("{}: fsync: {e}", self.path.display()),
                    e,
                ))
            })?;
        }
        Ok(())
    }
}

impl Transport for JsonlFile {
    async fn send(&self, line: String, _severity: Severity) -> Result<(), Error> {
        let file = self.clone();
        tokio::task::spawn_blocking(move || file.write_line(&line))
            .await
            .map_err(|e| {
                Error::Io(Cause::with_source(
                    format!("the writer task failed: {e}"),
                    e,
                ))
            })?
    }

    fn dropped(&self) -> u64 {
        0
    }

    async fn close(self, _wait: Duration) -> Flushed {
        let file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let _ = file.sync_data();
        Flushed::default()
    }
}
