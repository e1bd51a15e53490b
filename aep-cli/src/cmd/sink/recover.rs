//! Reading a sink file back after a stop, clean or not: the torn last line
//! a crash can leave (a write cut before its line end) is cut off, and the
//! file tells where its session stands: its `(source, session)`, the
//! highest `(epoch, seq)` it holds, and the `(source, id)` of its events
//! without a position (a command addressed to the session is kept in its
//! file though another source sent it). The file, not the state file, is the authority: it holds
//! exactly what was written before the crash.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader};
use std::path::Path;

use aep::reader::{Line, LineReader};
use serde::Deserialize;

use crate::diag;

/// The longest line read back (the relay's largest event is 16 MiB).
const MAX_LINE: usize = 64 << 20;

/// A position, `(epoch, seq)`.
pub type Pos = (u64, u64);

/// What a file holds.
#[derive(Debug, Default)]
pub struct Scan {
    /// The `(source, session)` of its first event.
    pub key: Option<(String, String)>,
    /// The highest position in it.
    pub max: Option<Pos>,
    /// The lowest position in it.
    pub min: Option<Pos>,
    /// The ids of its events without `seq`.
    pub seqless: Vec<(String, String)>,
    /// Its size after the repair.
    pub size: u64,
}

/// The members of an event the scan reads.
#[derive(Deserialize)]
struct Head {
    id: String,
    source: String,
    session: Option<String>,
    seq: Option<u64>,
    epoch: Option<u64>,
}

/// Scans the file at `path`; with `repair`, cuts a torn last line (no line
/// end) and trailing lines that are not events, saying so.
pub fn scan(path: &Path, repair: bool) -> io::Result<Scan> {
    let file = File::open(path)?;
    let mut lines = LineReader::new(BufReader::new(file), MAX_LINE);
    let mut scan = Scan::default();
    let mut offset = 0u64;
    // Where a trailing run of bad lines (or a torn line) starts.
    let mut cut: Option<(u64, &'static str)> = None;
    while let Some((number, line, ending)) = lines.next_line_with_ending()? {
        let (text, len) = match line {
            Line::Text(text) => (Some(text), text.len() as u64 + ending.len() as u64),
            Line::TooLong { .. } => (None, 0),
        };
        let Some(text) = text else {
            diag!(
                "aep sink: warning: {}:{number}: a line over {MAX_LINE} bytes",
                path.display()
            );
            cut.get_or_insert((offset, "a line too long to be an event"));
            // The reader skipped it; the offset is lost past here.
            break;
        };
        let start = offset;
        offset += len;
        if ending.is_empty() {
            cut = Some((cut.map_or(start, |(at, _)| at), "a torn last line"));
            break;
        }
        match serde_json::from_slice::<Head>(text) {
            Ok(head) => {
                cut = None;
                let key = (
                    head.source.clone(),
                    head.session.clone().unwrap_or_default(),
                );
                match &scan.key {
                    None => scan.key = Some(key),
                    // Another source's unpositioned event of the session: a
                    // command addressed to it, kept with it.
                    Some(first) if first.1 == key.1 && head.seq.is_none() => {
                        scan.seqless.push((head.source, head.id));
                        continue;
                    }
                    Some(first) if *first != key => {
                        diag!(
                            "aep sink: warning: {}:{number}: an event of another session ({:?}, {:?}); ignored for the resume point",
                            path.display(),
                            key.0,
                            key.1
                        );
                        continue;
                    }
                    Some(_) => {}
                }
                match head.seq {
                    Some(seq) => {
                        let pos = (head.epoch.unwrap_or(0), seq);
                        scan.max = scan.max.max(Some(pos));
                        scan.min = Some(scan.min.map_or(pos, |m| m.min(pos)));
                    }
                    None => scan.seqless.push((head.source, head.id)),
                }
            }
            Err(_) => {
                cut.get_or_insert((start, "lines that are not events at the end"));
            }
        }
    }
    let size = std::fs::metadata(path)?.len();
    scan.size = size;
    if let Some((at, why)) = cut {
        if at < size {
            if repair {
                let file = OpenOptions::new().write(true).open(path)?;
                file.set_len(at)?;
                file.sync_all()?;
                scan.size = at;
                diag!(
                    "aep sink: {}: cut {} byte(s) of {why} (a write the stop interrupted)",
                    path.display(),
                    size - at
                );
            } else {
                diag!("aep sink: warning: {}: ends with {why}", path.display());
            }
        }
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_line_and_trailing_junk_are_cut_and_positions_read() {
        let dir = std::env::temp_dir().join(format!("aep-sink-recover-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.jsonl");
        let good = "{\"id\":\"a\",\"source\":\"urn:a\",\"session\":\"s\",\"seq\":4}\n{\"id\":\"c\",\"source\":\"urn:x\",\"session\":\"s\"}\n{\"id\":\"d\",\"source\":\"urn:x\",\"session\":\"t\"}\n{\"id\":\"b\",\"source\":\"urn:a\",\"session\":\"s\",\"seq\":2,\"epoch\":1}\n";
        std::fs::write(&path, format!("{good}{{\"id\":\"torn\",\"sou")).unwrap();
        let scan = scan(&path, true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), good);
        assert_eq!(scan.key, Some(("urn:a".into(), "s".into())));
        assert_eq!((scan.min, scan.max), (Some((0, 4)), Some((1, 2))));
        assert_eq!(
            scan.seqless,
            [("urn:x".to_owned(), "c".to_owned())],
            "a command to the session is the file's, another session's event is not"
        );
        std::fs::write(&path, format!("{good}garbage\n{{}}\n")).unwrap();
        let again = super::scan(&path, true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), good);
        assert_eq!(again.size, good.len() as u64);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
