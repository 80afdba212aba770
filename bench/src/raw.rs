//! A raw HTTP/1.1 keep-alive connection for the closed submit loop: the whole request is bytes
//! written once (head and body prepared ahead, a counter patched in place), and the response is
//! read into one reused buffer and parsed with `httparse` — no per-request header map, body
//! stream or connection task. The load generator shares the machine's two cores with the server
//! under test, so every microsecond it spends is one the server does not get; this loop costs
//! ~40 % less CPU per request than hyper's client (docs/BENCHMARKS.md) and is the same for every
//! server measured.

use std::io::ErrorKind;

use anyhow::{Context as _, Result, bail};
use tokio::net::TcpStream;

use crate::http::Target;

/// One keep-alive connection.
pub struct RawConn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// A response's status, and its body when the status is not 2xx (for the error report).
pub struct RawResp {
    pub status: u16,
    pub body: Vec<u8>,
}

impl RawResp {
    /// `status body` for error messages (body cut to 300 bytes).
    pub fn show(&self) -> String {
        format!("{} {}", self.status, String::from_utf8_lossy(&self.body[..self.body.len().min(300)]))
    }
}

impl RawConn {
    /// Connect (see [`crate::http::tcp`]).
    pub async fn connect(target: &Target) -> Result<Self> {
        Ok(Self { stream: crate::http::tcp(target).await?, buf: Vec::with_capacity(4096) })
    }

    /// Write `request` (a whole HTTP/1.1 request) and read one response. `Err`: the transport
    /// failed or the response was not HTTP/1.1 this loop can read; the caller reconnects.
    pub async fn round_trip(&mut self, request: &[u8]) -> Result<RawResp> {
        let mut sent = 0;
        while sent < request.len() {
            match self.stream.try_write(&request[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.stream.writable().await?,
                Err(e) => return Err(e.into()),
            }
        }
        self.buf.clear();
        loop {
            if let Some(resp) = parse(&self.buf)? {
                return Ok(resp);
            }
            self.stream.readable().await?;
            let len = self.buf.len();
            self.buf.resize(len + 8192, 0);
            match self.stream.try_read(&mut self.buf[len..]) {
                Ok(0) => bail!("the server closed the connection"),
                Ok(n) => self.buf.truncate(len + n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.buf.truncate(len),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// One whole response at the start of `buf`, or `None` if more bytes are needed.
fn parse(buf: &[u8]) -> Result<Option<RawResp>> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut head = httparse::Response::new(&mut headers);
    let head_len = match head.parse(buf).context("not an HTTP/1.1 response")? {
        httparse::Status::Complete(n) => n,
        httparse::Status::Partial => return Ok(None),
    };
    let status = head.code.context("no status")?;
    let header = |name: &str| head.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
    let rest = &buf[head_len..];
    let body = if let Some(len) = header("content-length") {
        let len: usize = std::str::from_utf8(len)?.trim().parse().context("a bad content-length")?;
        if rest.len() < len {
            return Ok(None);
        }
        &rest[..len]
    } else if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case(b"chunked")) {
        match chunked_end(rest)? {
            Some(_) => rest, // still chunk-framed: only shown in error reports
            None => return Ok(None),
        }
    } else {
        bail!("a response without content-length or chunked framing")
    };
    let body = if (200..300).contains(&status) { Vec::new() } else { body.to_vec() };
    Ok(Some(RawResp { status, body }))
}

/// Where a chunked body ends (after the last chunk's blank line), if it is all in `buf`.
fn chunked_end(buf: &[u8]) -> Result<Option<usize>> {
    let mut at = 0;
    loop {
        let Some(eol) = buf[at..].windows(2).position(|w| w == b"\r\n") else { return Ok(None) };
        let line = std::str::from_utf8(&buf[at..at + eol])?;
        let size =
            usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).context("a bad chunk size")?;
        at += eol + 2;
        if size == 0 {
            // no trailers expected: the blank line ends the body
            return Ok((buf.len() >= at + 2).then_some(at + 2));
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        at += size + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_response_only_once_it_is_whole() {
        let r = b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"ok\":true}";
        for cut in 0..r.len() {
            assert!(parse(&r[..cut]).unwrap().is_none(), "cut at {cut}");
        }
        let whole = parse(r).unwrap().unwrap();
        assert_eq!((whole.status, whole.body.len()), (202, 0), "a 2xx body is not kept");
        let err = b"HTTP/1.1 409 Conflict\r\nContent-Length: 5\r\n\r\nnope!";
        let e = parse(err).unwrap().unwrap();
        assert_eq!(e.show(), "409 nope!");
    }

    #[test]
    fn reads_a_chunked_response() {
        let r = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n";
        let head = r.len() - b"4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n".len();
        for cut in 0..r.len() {
            assert!(parse(&r[..cut]).unwrap().is_none(), "cut at {cut}");
        }
        assert_eq!(parse(r).unwrap().unwrap().status, 200);
        assert_eq!(chunked_end(&r[head..]).unwrap(), Some(r.len() - head));
        assert!(parse(b"HTTP/1.1 200 OK\r\n\r\n").is_err(), "no framing");
    }
}
