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
    /// Read buffer, zeroed once and grown only for a larger response; `filled` bytes are valid.
    buf: Vec<u8>,
    filled: usize,
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
        Ok(Self { stream: crate::http::tcp(target).await?, buf: vec![0; 16 * 1024], filled: 0 })
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
        self.filled = 0;
        loop {
            if let Some((resp, used)) = parse(&self.buf[..self.filled])? {
                // one request in flight: bytes past its response are a protocol error
                if used != self.filled {
                    bail!("{} bytes after the response", self.filled - used);
                }
                return Ok(resp);
            }
            if self.filled == self.buf.len() {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            self.stream.readable().await?;
            match self.stream.try_read(&mut self.buf[self.filled..]) {
                Ok(0) => bail!("the server closed the connection"),
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// One whole response at the start of `buf` and the bytes it took, or `None` if more are needed.
/// Interim (1xx) responses are skipped; 204 and 304 have no body (RFC 9112 §6.3).
fn parse(buf: &[u8]) -> Result<Option<(RawResp, usize)>> {
    let mut at = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut head = httparse::Response::new(&mut headers);
        let head_len = match head.parse(&buf[at..]).context("not an HTTP/1.1 response")? {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => return Ok(None),
        };
        let status = head.code.context("no status")?;
        let start = at + head_len;
        if (100..200).contains(&status) {
            at = start;
            continue;
        }
        let header = |name: &str| head.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value);
        let rest = &buf[start..];
        // Transfer-Encoding wins over Content-Length (RFC 9112 §6.3)
        let body_len = if status == 204 || status == 304 {
            0
        } else if let Some(te) = header("transfer-encoding") {
            if !te.eq_ignore_ascii_case(b"chunked") {
                bail!("a transfer-encoding this loop cannot read");
            }
            match chunked_end(rest)? {
                Some(n) => n,
                None => return Ok(None),
            }
        } else if let Some(len) = header("content-length") {
            let len: usize = std::str::from_utf8(len)?.trim().parse().context("a bad content-length")?;
            if rest.len() < len {
                return Ok(None);
            }
            len
        } else {
            bail!("a response without content-length or chunked framing")
        };
        // a chunk-framed body stays framed: it is only shown in error reports
        let body = if (200..300).contains(&status) { Vec::new() } else { rest[..body_len].to_vec() };
        return Ok(Some((RawResp { status, body }, start + body_len)));
    }
}

/// Where a chunked body ends (after the last chunk and any trailers), if it is all in `buf`.
fn chunked_end(buf: &[u8]) -> Result<Option<usize>> {
    let crlf = |at: usize| buf[at..].windows(2).position(|w| w == b"\r\n").map(|p| at + p);
    let mut at = 0;
    loop {
        let Some(eol) = crlf(at) else { return Ok(None) };
        let line = std::str::from_utf8(&buf[at..eol])?;
        let size =
            usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16).context("a bad chunk size")?;
        at = eol + 2;
        if size == 0 {
            // trailer lines, if any, then the blank line
            loop {
                let Some(eol) = crlf(at) else { return Ok(None) };
                let blank = eol == at;
                at = eol + 2;
                if blank {
                    return Ok(Some(at));
                }
            }
        }
        let end = at.checked_add(size).and_then(|e| e.checked_add(2)).context("a chunk size past any buffer")?;
        if buf.len() < end {
            return Ok(None);
        }
        if &buf[end - 2..end] != b"\r\n" {
            bail!("a chunk not followed by CRLF");
        }
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `r` parsed whole, after checking that every shorter prefix asks for more bytes.
    fn whole(r: &[u8]) -> (RawResp, usize) {
        for cut in 0..r.len() {
            assert!(parse(&r[..cut]).unwrap().is_none(), "cut at {cut}");
        }
        parse(r).unwrap().unwrap()
    }

    #[test]
    fn reads_a_response_only_once_it_is_whole() {
        let r = b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"ok\":true}";
        let (resp, used) = whole(r);
        assert_eq!((resp.status, resp.body.len(), used), (202, 0, r.len()), "a 2xx body is not kept");
        let (e, _) = whole(b"HTTP/1.1 409 Conflict\r\nContent-Length: 5\r\n\r\nnope!");
        assert_eq!(e.show(), "409 nope!");
    }

    #[test]
    fn says_how_much_it_used_so_extra_bytes_are_seen() {
        let r = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1";
        assert_eq!(parse(r).unwrap().unwrap().1, r.len() - b"HTTP/1.1".len());
    }

    #[test]
    fn reads_a_chunked_response_with_or_without_trailers() {
        let r = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 1\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n";
        let (resp, used) = whole(r);
        assert_eq!((resp.status, resp.body.len(), used), (200, 0, r.len()), "chunked wins over length");
        let t = b"HTTP/1.1 500 Oops\r\ntransfer-encoding: chunked\r\n\r\n2\r\nno\r\n0\r\nx-trailer: v\r\n\r\n";
        assert_eq!(whole(t).1, t.len());
    }

    #[test]
    fn refuses_what_it_cannot_frame() {
        assert!(parse(b"HTTP/1.1 200 OK\r\n\r\n").is_err(), "no framing");
        let bad_crlf = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n";
        assert!(parse(bad_crlf).is_err());
        let huge = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nffffffffffffffff\r\nab";
        assert!(parse(huge).is_err(), "a size that would overflow is refused, not wrapped");
        assert!(parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n").is_err());
    }

    #[test]
    fn skips_interim_responses_and_reads_bodiless_statuses() {
        let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        let (resp, used) = whole(r);
        assert_eq!((resp.status, used), (204, r.len()));
        assert_eq!(whole(b"HTTP/1.1 304 Not Modified\r\n\r\n").0.status, 304);
    }
}
