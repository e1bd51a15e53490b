//! What a WebSocket connection holds of what its peer sends, in bytes.
//!
//! The WebSocket layer keeps a frame whole before it hands it on, and the
//! buffer it kept it in stays with the connection afterwards: a peer that
//! sends one frame of `--max-frame` would make every connection hold that
//! much for as long as it lives. So the relay reads the peer through a
//! [`Socket`], which
//!
//! - splits every data frame longer than [`FRAGMENT`] bytes into
//!   fragments of at most that size ([`Refragment`], RFC 6455 §5.4: the
//!   message is the same), so the layer's own buffers stay small and a
//!   message is gathered only while it arrives;
//! - charges every byte it hands on to the relay's `--max-inflight-bytes`
//!   (the budget `POST` bodies are read under) until the connection has
//!   handled the message it belongs to ([`Socket::release`]), and takes
//!   room for a frame's whole payload when its header is read, when that
//!   room is free and leaves half the budget free (large messages sent
//!   at once are then read as room comes back, rather than each holding
//!   part of the budget while waiting for the rest). When the budget is spent the
//!   peer is not read (TCP holds it back) for up to the message timeout;
//!   past that the read fails with [`Busy`];
//! - gives a message that has begun the message timeout
//!   (`Config::message_timeout`) to arrive whole: a peer that starts a
//!   message and stalls does not keep its bytes charged ([`Stalled`]).
//!
//! What a connection holds of its peer's bytes outside the budget is one
//! read ([`READ_CHUNK`]) waiting to be charged and what it became after
//! rewriting: a few tens of KiB whatever the peer sends.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{sleep, Sleep};

/// The longest data frame handed to the WebSocket layer, and the longest
/// the relay writes: a multiple of 4, so every fragment of a masked frame
/// keeps its masking key, and under 64 KiB, so its length takes the
/// 16-bit form.
pub(crate) const FRAGMENT: usize = 60 * 1024;
/// Bytes read from the peer at a time.
pub(crate) const READ_CHUNK: usize = 16 * 1024;
/// The read failed: `--max-inflight-bytes` stayed spent for the message
/// timeout.
#[derive(Debug)]
pub(crate) struct Busy;

/// The read failed: a message did not arrive whole within the message
/// timeout.
#[derive(Debug)]
pub(crate) struct Stalled;

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the relay's --max-inflight-bytes stayed spent")
    }
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a message did not arrive whole in time")
    }
}

impl std::error::Error for Busy {}
impl std::error::Error for Stalled {}

/// Rewrites a peer's WebSocket frames so that no data frame is longer
/// than [`FRAGMENT`]: a longer one becomes fragments (the first with its
/// opcode, the rest continuations, the last with its FIN bit) carrying
/// the same bytes under the same masking key. Control frames, frames with
/// reserved bits and frames over `max_frame` pass unchanged (the
/// WebSocket layer refuses what it must).
///
/// Sans-IO: bytes in, bytes out, in any pieces.
#[derive(Debug)]
pub(crate) struct Refragment {
    head: [u8; 14],
    head_len: usize,
    state: State,
    max_frame: u64,
    /// The frame under way: its opcode and FIN bit.
    frame: (u8, bool),
    /// The frame under way is at most `max_frame` long.
    within: bool,
    /// A data message has begun and not ended (control frames may come
    /// between its fragments).
    open: bool,
    /// Bytes taken since the last point where no message or frame was
    /// under way: what the message under way holds.
    pending: u64,
    /// Messages (or lone control frames) begun so far.
    started: u64,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Gathering a frame header.
    Header,
    /// Passing `left` payload bytes through.
    Pass { left: u64 },
    /// Splitting a frame: `left` of its payload bytes to come, `piece` of
    /// them in the fragment under way (0: a fragment header is due).
    Split {
        left: u64,
        piece: u64,
        first: bool,
        opcode: u8,
        fin: bool,
        mask: Option<[u8; 4]>,
    },
}

impl Refragment {
    /// A rewriter passing frames over `max_frame` bytes unchanged.
    pub fn new(max_frame: usize) -> Refragment {
        Refragment {
            head: [0; 14],
            head_len: 0,
            state: State::Header,
            max_frame: max_frame as u64,
            frame: (0, true),
            within: true,
            open: false,
            pending: 0,
            started: 0,
        }
    }

    /// Bytes taken that belong to a message (or frame) not yet whole.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Payload bytes still to come of the frame under way, when the
    /// WebSocket layer will read that frame whole (it is at most
    /// `max_frame`): what a reader may take room for ahead.
    pub fn frame_left(&self) -> u64 {
        match self.state {
            State::Pass { left } | State::Split { left, .. } if self.within => left,
            _ => 0,
        }
    }

    /// Which message the bytes [`Refragment::pending`] counts began: it
    /// changes when a new one begins.
    pub fn started(&self) -> u64 {
        self.started
    }

    /// A frame has ended: a data frame opens or closes its message, and
    /// when none is open nothing is pending.
    fn frame_done(&mut self) {
        let (opcode, fin) = self.frame;
        if opcode < 8 {
            self.open = !fin;
        }
        if !self.open {
            self.pending = 0;
        }
    }

    /// Rewrites `input`, appending to `out`; a header split across calls
    /// is kept until it is whole.
    pub fn push(&mut self, mut input: &[u8], out: &mut Vec<u8>) {
        while !input.is_empty() {
            match &mut self.state {
                State::Header => {
                    if self.head_len == 0 && !self.open {
                        self.started += 1;
                    }
                    self.pending += 1;
                    self.head[self.head_len] = input[0];
                    self.head_len += 1;
                    input = &input[1..];
                    if header_len(&self.head[..self.head_len]) == Some(self.head_len) {
                        self.begin(out);
                    }
                }
                State::Pass { left } => {
                    let n = (*left).min(input.len() as u64) as usize;
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *left -= n as u64;
                    self.pending += n as u64;
                    if *left == 0 {
                        self.state = State::Header;
                        self.frame_done();
                    }
                }
                State::Split {
                    left,
                    piece,
                    first,
                    opcode,
                    fin,
                    mask,
                } => {
                    if *piece == 0 {
                        *piece = (*left).min(FRAGMENT as u64);
                        let last = *piece == *left;
                        let code = if *first { *opcode } else { 0 };
                        *first = false;
                        out.push(if last && *fin { 0x80 } else { 0 } | code);
                        write_len(out, *piece, *mask);
                    }
                    let n = (*piece).min(input.len() as u64) as usize;
                    out.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    *piece -= n as u64;
                    *left -= n as u64;
                    self.pending += n as u64;
                    if *left == 0 {
                        self.state = State::Header;
                        self.frame_done();
                    }
                }
            }
        }
    }

    /// A whole header is in `head`: pass it on or start splitting.
    fn begin(&mut self, out: &mut Vec<u8>) {
        let head = &self.head[..self.head_len];
        let (fin, reserved, opcode) = (head[0] & 0x80 != 0, head[0] & 0x70, head[0] & 0x0f);
        let masked = head[1] & 0x80 != 0;
        let (len, at) = match head[1] & 0x7f {
            126 => (u16::from_be_bytes([head[2], head[3]]) as u64, 4),
            127 => {
                let mut bytes = [0; 8];
                bytes.copy_from_slice(&head[2..10]);
                (u64::from_be_bytes(bytes), 10)
            }
            n => (n as u64, 2),
        };
        let mask = masked.then(|| [head[at], head[at + 1], head[at + 2], head[at + 3]]);
        self.head_len = 0;
        self.frame = (opcode, fin);
        self.within = len <= self.max_frame;
        let data = opcode <= 2;
        if data && reserved == 0 && len > FRAGMENT as u64 && len <= self.max_frame {
            self.state = State::Split {
                left: len,
                piece: 0,
                first: true,
                opcode,
                fin,
                mask,
            };
            return;
        }
        out.extend_from_slice(head);
        if len == 0 {
            self.state = State::Header;
            self.frame_done();
        } else {
            self.state = State::Pass { left: len };
        }
    }
}

/// The length of the header `head` begins, once its first two bytes say.
fn header_len(head: &[u8]) -> Option<usize> {
    let second = *head.get(1)?;
    let extended = match second & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    Some(2 + extended + mask)
}

/// A fragment's length (at most [`FRAGMENT`], so never the 64-bit form)
/// and masking key.
fn write_len(out: &mut Vec<u8>, len: u64, mask: Option<[u8; 4]>) {
    let masked = if mask.is_some() { 0x80 } else { 0 };
    if len < 126 {
        out.push(masked | len as u8);
    } else {
        out.push(masked | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    }
    if let Some(key) = mask {
        out.extend_from_slice(&key);
    }
}

type Acquire =
    Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, tokio::sync::AcquireError>> + Send>>;

/// A peer's stream as the WebSocket layer reads it: refragmented and
/// charged to a byte budget (see the module's documentation). Writes pass
/// through.
pub(crate) struct Socket<S> {
    inner: S,
    refragment: Refragment,
    /// Where bytes are read from the peer.
    scratch: Box<[u8]>,
    /// Bytes read and rewritten, not yet handed on (from `at`): they are
    /// handed on once `owed` is charged.
    ready: Vec<u8>,
    at: usize,
    /// Permits to take before `ready` is handed on.
    owed: usize,
    /// Permits held for the rest of the frame under way
    /// ([`Refragment::frame_left`]), taken when its header was read.
    ahead: usize,
    budget: Arc<Semaphore>,
    /// Room is taken ahead only while this much of the budget stays free.
    floor: usize,
    max_frame: usize,
    /// What the bytes handed on since the last release, and the room
    /// taken ahead, hold of the budget.
    held: Option<OwnedSemaphorePermit>,
    waiting: Option<(Acquire, Pin<Box<Sleep>>)>,
    /// When the message under way must be whole, and which one it is
    /// ([`Refragment::started`]).
    deadline: Option<(Pin<Box<Sleep>>, u64)>,
    /// How long a message may take, and a read wait for the budget.
    wait: Duration,
}

impl<S> Socket<S> {
    /// `inner` read under `budget` (one permit a byte, `total` in all),
    /// a message given `wait` to arrive; frames over `max_frame` pass
    /// unsplit.
    pub fn new(
        inner: S,
        budget: Arc<Semaphore>,
        total: usize,
        max_frame: usize,
        wait: Duration,
    ) -> Socket<S> {
        Socket {
            inner,
            refragment: Refragment::new(max_frame),
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            ready: Vec::new(),
            at: 0,
            owed: 0,
            ahead: 0,
            budget,
            floor: total / 2,
            max_frame,
            held: None,
            waiting: None,
            deadline: None,
            wait,
        }
    }

    /// The connection has handled every message it was handed (a ping
    /// between the fragments of a message included): their bytes go back
    /// to the budget. What a message not yet whole has taken stays
    /// charged, and its deadline stays as it was set when it began.
    pub fn release(&mut self) {
        let pending = self.refragment.pending() as usize;
        if pending == 0 {
            self.held = None;
            self.deadline = None;
            return;
        }
        if let Some(held) = &mut self.held {
            let keep = (pending + self.ahead).min(held.num_permits());
            // The bytes past the pending ones are given back.
            drop(held.split(held.num_permits() - keep));
        }
        let started = self.refragment.started();
        if self
            .deadline
            .as_ref()
            .is_none_or(|(_, which)| *which != started)
        {
            self.deadline = Some((Box::pin(sleep(self.wait)), started));
        }
    }

    /// Bytes charged now.
    #[cfg(test)]
    fn charged(&self) -> usize {
        self.held
            .as_ref()
            .map_or(0, OwnedSemaphorePermit::num_permits)
    }

    /// Permits for the `owed` bytes.
    fn charge(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<OwnedSemaphorePermit>> {
        let n = self.owed;
        if self.waiting.is_none() {
            match self.budget.clone().try_acquire_many_owned(n as u32) {
                Ok(permit) => return Poll::Ready(Ok(permit)),
                Err(tokio::sync::TryAcquireError::Closed) => {
                    return Poll::Ready(Err(io::Error::other(Busy)))
                }
                Err(tokio::sync::TryAcquireError::NoPermits) => {}
            }
            let acquire: Acquire = Box::pin(self.budget.clone().acquire_many_owned(n as u32));
            self.waiting = Some((acquire, Box::pin(sleep(self.wait))));
        }
        let (acquire, until) = self.waiting.as_mut().expect("set above");
        if let Poll::Ready(permit) = acquire.as_mut().poll(cx) {
            self.waiting = None;
            return Poll::Ready(permit.map_err(|_| io::Error::other(Busy)));
        }
        ready!(until.as_mut().poll(cx));
        self.waiting = None;
        Poll::Ready(Err(io::Error::other(Busy)))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Socket<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.owed > 0 {
                let permit = match ready!(this.charge(cx)) {
                    Ok(permit) => permit,
                    Err(e) => {
                        // Given up: what was read goes, uncharged.
                        this.owed = 0;
                        this.ready.clear();
                        this.at = 0;
                        return Poll::Ready(Err(e));
                    }
                };
                this.owed = 0;
                match &mut this.held {
                    Some(held) => held.merge(permit),
                    None => this.held = Some(permit),
                }
            }
            if this.at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.at);
                buf.put_slice(&this.ready[this.at..this.at + n]);
                this.at += n;
                if this.at == this.ready.len() {
                    this.ready.clear();
                    this.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    if let Some((deadline, _)) = this.deadline.as_mut() {
                        ready!(deadline.as_mut().poll(cx));
                        return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, Stalled)));
                    }
                    return Poll::Pending;
                }
            }
            let n = read.filled().len();
            if n == 0 {
                return Poll::Ready(Ok(()));
            }
            this.refragment.push(&this.scratch[..n], &mut this.ready);
            // The bytes read are charged, those of the frame under way
            // from the room taken for it ahead. A frame whose header they
            // complete takes room for the rest of its payload now when
            // that room is free, so a message under way need not wait
            // for room midway: large messages sent at once are then read
            // one after another rather than each holding part of the
            // budget while waiting for the rest. That room is never
            // waited for, is taken only while half the budget stays free
            // after it (peers that announce frames and stall keep at
            // most that), and never for a message past `max_frame`.
            let covered = n.min(this.ahead);
            this.ahead -= covered;
            this.owed = n - covered;
            let left = this.refragment.frame_left() as usize;
            let want = left.saturating_sub(this.ahead);
            let within = this.refragment.pending() as usize + left <= this.max_frame;
            if want > 0
                && within
                && this.budget.available_permits() >= want.saturating_add(this.floor)
            {
                if let Ok(permit) = this.budget.clone().try_acquire_many_owned(want as u32) {
                    this.ahead += want;
                    match &mut this.held {
                        Some(held) => held.merge(permit),
                        None => this.held = Some(permit),
                    }
                }
            }
            if this.deadline.is_none() {
                let started = this.refragment.started();
                this.deadline = Some((Box::pin(sleep(this.wait)), started));
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Socket<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::io::Cursor;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
    use tokio_tungstenite::tungstenite::{self, Message};
    use tokio_tungstenite::WebSocketStream;

    /// What a client writes for `messages` (masked, as a client must).
    fn client_bytes(messages: &[Message]) -> Vec<u8> {
        let mut client =
            tungstenite::WebSocket::from_raw_socket(Cursor::new(Vec::new()), Role::Client, None);
        for message in messages {
            client.write(message.clone()).unwrap();
        }
        client.flush().unwrap();
        client.get_ref().get_ref().clone()
    }

    /// `input` through a [`Refragment`] in pieces of varying size.
    fn rewrite(input: &[u8], max_frame: usize) -> Vec<u8> {
        let mut refragment = Refragment::new(max_frame);
        let mut out = Vec::new();
        let (mut at, mut step) = (0, 1);
        while at < input.len() {
            let end = (at + step).min(input.len());
            refragment.push(&input[at..end], &mut out);
            at = end;
            step = (step * 7 + 3) % 20_011 + 1;
        }
        out
    }

    /// (FIN, opcode, payload length) of each frame in `bytes`.
    fn frames(bytes: &[u8]) -> Vec<(bool, u8, usize)> {
        let mut frames = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let head = &bytes[at..];
            let (len, mut size) = match head[1] & 0x7f {
                126 => (u16::from_be_bytes([head[2], head[3]]) as usize, 4),
                127 => (
                    u64::from_be_bytes(head[2..10].try_into().unwrap()) as usize,
                    10,
                ),
                n => (n as usize, 2),
            };
            if head[1] & 0x80 != 0 {
                size += 4;
            }
            frames.push((head[0] & 0x80 != 0, head[0] & 0x0f, len));
            at += size + len;
        }
        frames
    }

    /// A peer's bytes to read; what is written to it (pongs) is dropped.
    struct Peer(Cursor<Vec<u8>>);

    impl io::Read for Peer {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl io::Write for Peer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The messages a server reads from `bytes`, and the error it ends on.
    fn server_reads(bytes: Vec<u8>, max: usize) -> (Vec<Message>, Option<tungstenite::Error>) {
        let config = WebSocketConfig::default()
            .max_message_size(Some(max))
            .max_frame_size(Some(max));
        let peer = Peer(Cursor::new(bytes));
        let mut server = tungstenite::WebSocket::from_raw_socket(peer, Role::Server, Some(config));
        let mut read = Vec::new();
        loop {
            match server.read() {
                Ok(message) => read.push(message),
                // The end of the bytes.
                Err(tungstenite::Error::Protocol(
                    tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
                )) => return (read, None),
                Err(e) => return (read, Some(e)),
            }
        }
    }

    fn text(len: usize) -> String {
        // Multi-byte characters, so some fragment ends inside one.
        "aé€𝄞"
            .chars()
            .cycle()
            .scan(0, |n, c| {
                *n += c.len_utf8();
                (*n <= len).then_some(c)
            })
            .collect()
    }

    #[test]
    fn long_frames_become_fragments_of_the_same_message() {
        let max = 4 << 20;
        let sizes = [
            0,
            125,
            126,
            65_535,
            FRAGMENT,
            FRAGMENT + 1,
            3 * FRAGMENT + 7,
            1 << 20,
        ];
        let mut messages = Vec::new();
        for size in sizes {
            messages.push(Message::text(text(size)));
            messages.push(Message::Ping(vec![1, 2, 3].into()));
            messages.push(Message::binary(vec![size as u8; size]));
        }
        let input = client_bytes(&messages);
        let output = rewrite(&input, max);
        for (fin, opcode, len) in frames(&output) {
            assert!(len <= FRAGMENT, "a frame of {len} bytes");
            if opcode >= 8 {
                assert!(fin);
            }
        }
        assert!(frames(&output).len() > frames(&input).len());
        let (read, error) = server_reads(output, max);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(read, messages);
    }

    #[test]
    fn a_fragmented_message_keeps_its_fragments_order_and_interleaved_pings() {
        let body = text(5 * FRAGMENT);
        let (a, b) = body.split_at(body.char_indices().nth(2 * FRAGMENT / 3).unwrap().0);
        let (b, c) = b.split_at(10);
        let fragments = [
            Message::Frame(Frame::message(
                a.to_owned(),
                OpCode::Data(Data::Text),
                false,
            )),
            Message::Frame(Frame::message(
                b.to_owned(),
                OpCode::Data(Data::Continue),
                false,
            )),
            Message::Ping(vec![9].into()),
            Message::Frame(Frame::message(
                c.to_owned(),
                OpCode::Data(Data::Continue),
                true,
            )),
        ];
        let output = rewrite(&client_bytes(&fragments), 8 << 20);
        let shape = frames(&output);
        // Only the first fragment is a text frame; the last frame of the
        // message alone has FIN.
        assert_eq!(shape.iter().filter(|f| f.1 == 1).count(), 1);
        let fins: Vec<_> = shape.iter().filter(|f| f.1 < 8 && f.0).collect();
        assert_eq!(fins.len(), 1);
        let (read, error) = server_reads(output, 8 << 20);
        assert!(error.is_none(), "{error:?}");
        assert_eq!(
            read,
            vec![Message::Ping(vec![9].into()), Message::text(body)]
        );
    }

    #[test]
    fn a_frame_over_the_limit_passes_whole_and_is_refused() {
        let max = 100_000;
        let input = client_bytes(&[Message::text(text(max + 1))]);
        let output = rewrite(&input, max);
        assert_eq!(output, input);
        let (read, error) = server_reads(output, max);
        assert!(read.is_empty());
        assert!(
            matches!(error, Some(tungstenite::Error::Capacity(_))),
            "{error:?}"
        );
        // Fragments within the frame limit still make a message over the
        // message limit: refused by the same check.
        let input = client_bytes(&[Message::text(text(3 * FRAGMENT))]);
        let (_, error) = server_reads(rewrite(&input, 4 << 20), 2 * FRAGMENT);
        assert!(
            matches!(error, Some(tungstenite::Error::Capacity(_))),
            "{error:?}"
        );
    }

    /// A server reading through a [`Socket`] under `budget`, and its client.
    async fn pair(
        budget: &Arc<Semaphore>,
        wait: Duration,
    ) -> (
        WebSocketStream<Socket<tokio::io::DuplexStream>>,
        tokio::io::DuplexStream,
    ) {
        let (server, client) = tokio::io::duplex(1 << 20);
        let total = budget.available_permits();
        let socket = Socket::new(server, budget.clone(), total, 8 << 20, wait);
        let server = WebSocketStream::from_raw_socket(socket, Role::Server, None).await;
        (server, client)
    }

    #[tokio::test]
    async fn bytes_stay_charged_until_their_message_is_handled() {
        use tokio::io::AsyncWriteExt;
        let budget = Arc::new(Semaphore::new(1 << 20));
        let (mut server, mut client) = pair(&budget, Duration::from_secs(30)).await;
        let message = Message::text(text(200_000));
        client
            .write_all(&client_bytes(std::slice::from_ref(&message)))
            .await
            .unwrap();
        let read = server.next().await.unwrap().unwrap();
        assert_eq!(read, message);
        let charged = server.get_ref().charged();
        assert!(charged >= 200_000, "{charged}");
        assert_eq!(budget.available_permits(), (1 << 20) - charged);
        drop(read);
        server.get_mut().release();
        assert_eq!(server.get_ref().charged(), 0);
        assert_eq!(budget.available_permits(), 1 << 20);
    }

    #[tokio::test]
    async fn a_read_past_the_budget_waits_then_fails_busy() {
        use tokio::io::AsyncWriteExt;
        let budget = Arc::new(Semaphore::new(64 * 1024));
        let (mut server, mut client) = pair(&budget, Duration::from_millis(200)).await;
        let bytes = client_bytes(&[Message::binary(vec![7; 300_000])]);
        tokio::spawn(async move {
            let _ = client.write_all(&bytes).await;
            // Held open: the peer is there, the relay is not reading it.
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        let error = server.next().await.unwrap().unwrap_err();
        let tungstenite::Error::Io(error) = error else {
            panic!("{error:?}");
        };
        assert!(error.get_ref().unwrap().is::<Busy>(), "{error:?}");
        // It never took more than the budget, and gives it back when the
        // connection goes.
        assert!(server.get_ref().charged() <= 64 * 1024);
        drop(server);
        assert_eq!(budget.available_permits(), 64 * 1024);
    }

    #[tokio::test]
    async fn a_message_that_stalls_fails_and_an_idle_peer_holds_nothing() {
        use tokio::io::AsyncWriteExt;
        let budget = Arc::new(Semaphore::new(1 << 20));
        let wait = Duration::from_millis(300);
        let (mut server, mut client) = pair(&budget, wait).await;
        // An idle peer: nothing charged, nothing ends it before the wait.
        let idle = tokio::time::timeout(2 * wait, server.next()).await;
        assert!(idle.is_err(), "an idle peer was ended: {idle:?}");
        assert_eq!(budget.available_permits(), 1 << 20);
        // A message begun and never finished.
        let bytes = client_bytes(&[Message::binary(vec![7; 100_000])]);
        client.write_all(&bytes[..30_000]).await.unwrap();
        let error = server.next().await.unwrap().unwrap_err();
        let tungstenite::Error::Io(error) = error else {
            panic!("{error:?}");
        };
        assert!(error.get_ref().unwrap().is::<Stalled>(), "{error:?}");
        drop(client);
    }

    #[tokio::test]
    async fn pings_between_fragments_leave_the_message_charged_and_its_deadline_running() {
        use tokio::io::AsyncWriteExt;
        let budget = Arc::new(Semaphore::new(8 << 20));
        let wait = Duration::from_millis(400);
        let (mut server, mut client) = pair(&budget, wait).await;
        tokio::spawn(async move {
            for n in 0..40 {
                let opcode = if n == 0 { Data::Text } else { Data::Continue };
                let fragment = Frame::message("x".repeat(FRAGMENT), OpCode::Data(opcode), false);
                let bytes =
                    client_bytes(&[Message::Frame(fragment), Message::Ping(vec![1].into())]);
                if client.write_all(&bytes).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        let mut pings = 0;
        let error = loop {
            match server.next().await.unwrap() {
                Ok(Message::Ping(_)) => {
                    pings += 1;
                    // As the relay does after each message it is handed.
                    server.get_mut().release();
                    let charged = server.get_ref().charged();
                    assert!(
                        charged >= pings * FRAGMENT,
                        "{charged} after {pings} fragments"
                    );
                }
                Ok(other) => panic!("{other:?}"),
                Err(e) => break e,
            }
        };
        // The message never ends: it is let go at its deadline, however
        // many pings came.
        let tungstenite::Error::Io(error) = error else {
            panic!("{error:?}");
        };
        assert!(error.get_ref().unwrap().is::<Stalled>(), "{error:?}");
        assert!(pings < 40, "{pings} pings");
    }

    #[tokio::test]
    async fn a_release_keeps_what_the_next_message_has_begun() {
        use tokio::io::AsyncWriteExt;
        let budget = Arc::new(Semaphore::new(1 << 20));
        let (mut server, mut client) = pair(&budget, Duration::from_secs(30)).await;
        // A whole message and the first 5 000 bytes of the next, at once.
        let first = client_bytes(&[Message::binary(vec![1; 3_000])]);
        let second = client_bytes(&[Message::binary(vec![2; 100_000])]);
        let mut bytes = first.clone();
        bytes.extend_from_slice(&second[..5_000]);
        client.write_all(&bytes).await.unwrap();
        let read = server.next().await.unwrap().unwrap();
        assert_eq!(read.len(), 3_000);
        server.get_mut().release();
        // The 5 000 bytes read, and room for the rest of its frame,
        // taken when its header was read.
        assert_eq!(server.get_ref().charged(), second.len());
        assert_eq!(budget.available_permits(), (1 << 20) - second.len());
        client.write_all(&second[5_000..]).await.unwrap();
        assert_eq!(server.next().await.unwrap().unwrap().len(), 100_000);
        server.get_mut().release();
        assert_eq!(budget.available_permits(), 1 << 20);
    }

    #[tokio::test]
    async fn large_messages_sent_at_once_are_all_read_though_together_they_pass_the_budget() {
        use tokio::io::AsyncWriteExt;
        // Three messages of 190 000 bytes against 400 000 of budget:
        // charged only as their bytes came, each would take a third of
        // it and wait for the rest until its deadline. The first takes
        // room for its whole frame at its header (half the budget stays
        // free), and the others are read as it gives room back.
        let budget = Arc::new(Semaphore::new(400_000));
        let wait = Duration::from_secs(20);
        let mut servers = Vec::new();
        for byte in 1..=3u8 {
            let (server, mut client) = pair(&budget, wait).await;
            let bytes = client_bytes(&[Message::binary(vec![byte; 190_000])]);
            // Each peer sends its message in three parts, so all are
            // under way at once.
            tokio::spawn(async move {
                for part in bytes.chunks(63_340) {
                    if client.write_all(part).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(150)).await;
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
            servers.push(server);
        }
        let read = |mut server: WebSocketStream<Socket<tokio::io::DuplexStream>>| async move {
            let message = server.next().await.unwrap().unwrap();
            // Handled: its bytes go back.
            server.get_mut().release();
            (message.len(), server)
        };
        let mut servers = servers.into_iter();
        let (a, b, c) = (
            servers.next().unwrap(),
            servers.next().unwrap(),
            servers.next().unwrap(),
        );
        let (a, b, c) = tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(read(a), read(b), read(c))
        })
        .await
        .expect("all read well before their deadline");
        assert_eq!((a.0, b.0, c.0), (190_000, 190_000, 190_000));
        assert_eq!(budget.available_permits(), 400_000);
    }

    #[tokio::test]
    async fn room_is_taken_ahead_only_while_half_the_budget_stays_free() {
        use tokio::io::AsyncWriteExt;
        let budget = Arc::new(Semaphore::new(400_000));
        let (mut server, mut client) = pair(&budget, Duration::from_secs(20)).await;
        // A header announcing 300 000 bytes, and 10 of them: more than
        // half the budget, so only what was read is charged.
        let bytes = client_bytes(&[Message::binary(vec![1; 300_000])]);
        client.write_all(&bytes[..24]).await.unwrap();
        let pending = tokio::time::timeout(Duration::from_millis(300), server.next()).await;
        assert!(pending.is_err(), "the message is not whole");
        assert_eq!(budget.available_permits(), 400_000 - 24);
        drop((server, client));
        assert_eq!(budget.available_permits(), 400_000);
        // 150 000 bytes, announced: room for all of them is taken.
        let (mut server, mut client) = pair(&budget, Duration::from_secs(20)).await;
        let bytes = client_bytes(&[Message::binary(vec![1; 150_000])]);
        client.write_all(&bytes[..24]).await.unwrap();
        let pending = tokio::time::timeout(Duration::from_millis(300), server.next()).await;
        assert!(pending.is_err(), "the message is not whole");
        assert_eq!(budget.available_permits(), 400_000 - bytes.len());
        drop((server, client));
        assert_eq!(budget.available_permits(), 400_000);
    }

    /// A server reading through a [`Socket`] whose frame and message
    /// limit is `max` (as the relay sets it), and its client.
    async fn pair_limited(
        budget: &Arc<Semaphore>,
        max: usize,
        wait: Duration,
    ) -> (
        WebSocketStream<Socket<tokio::io::DuplexStream>>,
        tokio::io::DuplexStream,
    ) {
        let (server, client) = tokio::io::duplex(4 << 20);
        let total = budget.available_permits();
        let socket = Socket::new(server, budget.clone(), total, max, wait);
        let config = tungstenite::protocol::WebSocketConfig::default()
            .read_buffer_size(READ_CHUNK)
            .max_message_size(Some(max))
            .max_frame_size(Some(max));
        let server = WebSocketStream::from_raw_socket(socket, Role::Server, Some(config)).await;
        (server, client)
    }

    /// A masked frame header announcing `len` bytes (64-bit form).
    fn header(fin: bool, opcode: u8, len: u64) -> Vec<u8> {
        let mut h = vec![if fin { 0x80 } else { 0 } | opcode, 0x80 | 127];
        h.extend_from_slice(&len.to_be_bytes());
        h.extend_from_slice(&[1, 2, 3, 4]);
        h
    }

    #[tokio::test]
    async fn a_message_past_the_limit_in_fragments_within_it_is_refused_as_too_big() {
        use tokio::io::AsyncWriteExt;
        // The smallest budget the relay's checks allow for this limit.
        let max = 256 * 1024;
        let total = max + 64 * 1024;
        let budget = Arc::new(Semaphore::new(total));
        let (mut server, mut client) = pair_limited(&budget, max, Duration::from_secs(3)).await;
        // Two fragments, each within the frame limit, the whole past the
        // message limit: refused when the second fragment's header is
        // read, not held waiting for room it can never have.
        let first = Frame::message(vec![1u8; 200_000], OpCode::Data(Data::Binary), false);
        let second = Frame::message(vec![2u8; max], OpCode::Data(Data::Continue), true);
        let bytes = client_bytes(&[Message::Frame(first), Message::Frame(second)]);
        tokio::spawn(async move {
            let _ = client.write_all(&bytes).await;
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        let error = server.next().await.unwrap().unwrap_err();
        assert!(
            matches!(error, tungstenite::Error::Capacity(_)),
            "{error:?}"
        );
    }

    #[tokio::test]
    async fn a_peer_that_announces_a_frame_and_stalls_never_keeps_others_waiting() {
        use tokio::io::AsyncWriteExt;
        let max = 256 * 1024;
        let total = max + 64 * 1024;
        let budget = Arc::new(Semaphore::new(total));
        let (server, mut client) = pair_limited(&budget, max, Duration::from_secs(3)).await;
        // A POST body of 50 000 bytes being read meanwhile.
        let post = budget.clone().try_acquire_many_owned(50_000).unwrap();
        let first = Frame::message(vec![1u8; 150_000], OpCode::Data(Data::Binary), false);
        let mut bytes = client_bytes(&[Message::Frame(first)]);
        // Only the header of a second fragment.
        bytes.extend_from_slice(&header(true, 0, 100_000));
        tokio::spawn(async move {
            let _ = client.write_all(&bytes).await;
            tokio::time::sleep(Duration::from_secs(60)).await;
        });
        let reader = tokio::spawn(async move {
            let mut server = server;
            let _ = server.next().await;
            server
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(post);
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Another POST of 1 KiB gets in.
        let available = budget.available_permits();
        assert!(
            budget.clone().try_acquire_many_owned(1024).is_ok(),
            "a 1 KiB POST refused: {available} of {total} available"
        );
        reader.abort();
    }

    #[tokio::test]
    async fn headers_alone_take_at_most_half_the_budget() {
        use tokio::io::AsyncWriteExt;
        // The defaults: --max-inflight-bytes 64 MiB, --max-frame 4 MiB.
        let (total, max) = (64 << 20, 4 << 20);
        let budget = Arc::new(Semaphore::new(total));
        let mut kept = Vec::new();
        for _ in 0..16 {
            let (mut server, mut client) =
                pair_limited(&budget, max, Duration::from_secs(30)).await;
            // 14 bytes: a frame header and nothing after it.
            client
                .write_all(&header(true, 2, max as u64))
                .await
                .unwrap();
            let _ = tokio::time::timeout(Duration::from_millis(50), server.next()).await;
            kept.push((server, client));
        }
        let held = total - budget.available_permits();
        assert!(
            held <= total / 2 + 16 * 14,
            "224 bytes from peers hold {held} bytes of the budget"
        );
    }

    #[test]
    fn frame_left_is_zero_for_a_frame_past_the_limit_all_along() {
        let mut refragment = Refragment::new(100_000);
        let mut out = Vec::new();
        refragment.push(&header(true, 2, 200_000), &mut out);
        assert_eq!(refragment.frame_left(), 0);
        refragment.push(&[0; 150_000], &mut out);
        assert_eq!(refragment.frame_left(), 0);
    }
}
