//! The HTTP/1.1 server on loopback under both scripted models (`model.rs` for Claude Code's
//! Messages API, `codex_model.rs` for the Codex CLI's Responses API): one request per
//! connection, every request recorded, the answer made by the model's [`Handler`].
//!
//! Bounds: it listens on `127.0.0.1:0` only, stops by itself after its lifetime, answers at most
//! [`MAX_REQUESTS`] requests, reads with timeouts and caps request sizes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::model::{Kind, Request};

/// How many requests a server answers at most (a runaway loop ends here).
pub const MAX_REQUESTS: usize = 400;
/// Largest request body read.
const MAX_BODY: usize = 32 << 20;

/// One answer: how the request was classified, the status line after `HTTP/1.1 `, the content
/// type and the body (not sent for `HEAD`).
pub type Answer = (Kind, &'static str, &'static str, Vec<u8>);

/// What makes a scripted model of the server: its answer to one request.
pub trait Handler: Send + Sync + 'static {
    /// Extra header lines of every answer (each ending in `\r\n`).
    const HEADERS: &'static str;
    /// The answer to `method` `path` with its JSON `body` (when it parsed).
    fn answer(&self, method: &str, path: &str, body: Option<&Value>) -> Answer;
}

/// A scripted model: the script it answers from (of type `S`, replaced between client runs)
/// and the counter that numbers the ids it hands out.
pub struct Scripted<S> {
    /// The steps still to answer.
    pub script: Mutex<S>,
    /// How many ids it has handed out.
    pub ids: AtomicUsize,
}

impl<S> Scripted<S> {
    /// A model answering from `script`, no answer given yet.
    pub fn new(script: S) -> Self {
        Self {
            script: Mutex::new(script),
            ids: AtomicUsize::new(0),
        }
    }
}

struct Shared<H> {
    handler: H,
    requests: Mutex<Vec<Request>>,
    stop: AtomicBool,
    served: AtomicUsize,
    deadline: Instant,
}

/// The running server; stops when dropped.
pub struct Loopback<H: Handler> {
    addr: SocketAddr,
    shared: Arc<Shared<H>>,
    thread: Option<JoinHandle<()>>,
}

impl<H: Handler> Loopback<H> {
    /// Starts a server on `127.0.0.1:0` answering with `handler`, living `lifetime` at most.
    pub fn listen(handler: H, lifetime: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            handler,
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            served: AtomicUsize::new(0),
            deadline: Instant::now() + lifetime,
        });
        let accept_shared = Arc::clone(&shared);
        let thread = std::thread::spawn(move || accept_loop(&listener, &accept_shared));
        Self {
            addr,
            shared,
            thread: Some(thread),
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request recorded so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().expect("requests lock").clone()
    }
}

impl<S: Send + 'static> Loopback<Scripted<S>>
where
    Scripted<S>: Handler,
{
    /// Replaces the script (for the next client run).
    pub fn set_script(&self, script: S) {
        *self.shared.handler.script.lock().expect("script lock") = script;
    }
}

impl<H: Handler> Drop for Loopback<H> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn accept_loop<H: Handler>(listener: &TcpListener, shared: &Arc<Shared<H>>) {
    let mut workers = Vec::new();
    while !shared.stop.load(Ordering::SeqCst) && Instant::now() < shared.deadline {
        match listener.accept() {
            Ok((stream, peer)) => {
                if !peer.ip().is_loopback() || shared.served.load(Ordering::SeqCst) >= MAX_REQUESTS
                {
                    continue;
                }
                let shared = Arc::clone(shared);
                workers.push(std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                }));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    for worker in workers {
        let _ = worker.join();
    }
}

/// Serves one connection: one request, one answer, then close.
fn serve<H: Handler>(stream: TcpStream, shared: &Shared<H>) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    stream.set_write_timeout(Some(Duration::from_secs(20)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut length = 0usize;
    let mut chunked = false;
    let mut header_bytes = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        header_bytes += header.len();
        let header = header.trim_end();
        if header.is_empty() || header_bytes > 256 << 10 {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse().unwrap_or(0).min(MAX_BODY);
        } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if name == "expect" && value.eq_ignore_ascii_case("100-continue") {
            writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
    }
    let body = if chunked {
        read_chunked(&mut reader)?
    } else {
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    shared.served.fetch_add(1, Ordering::SeqCst);
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let (kind, status, content_type, answer) =
        shared.handler.answer(&method, &path, parsed.as_ref());
    shared
        .requests
        .lock()
        .expect("requests lock")
        .push(Request {
            method: method.clone(),
            path,
            kind,
            body: parsed,
        });
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{}connection: close\r\n\r\n",
        answer.len(),
        H::HEADERS
    );
    writer.write_all(head.as_bytes())?;
    if method != "HEAD" {
        writer.write_all(&answer)?;
    }
    writer.flush()
}

fn read_chunked(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size =
            usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        if size == 0 || body.len() + size > MAX_BODY {
            let mut end = String::new();
            let _ = reader.read_line(&mut end);
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0u8; 2];
        reader.read_exact(&mut crlf)?;
    }
}
