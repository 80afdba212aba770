//! The local server's accept loop: HTTP/1.1 over hyper with a header deadline (which is also the
//! idle keep-alive deadline), a whole-body deadline, a write-stall deadline, a global and a
//! per-address connection cap, and a graceful shutdown.
//!
//! The write-stall deadline ([`WriteStall`]): a response — a drain, an SSE stream, a page — is
//! buffered by hyper until the client takes it. A client that reads nothing used to pin it for as
//! long as the socket stayed open (issue 36: 24 never-reading drains took the Hub from 76 MB to
//! 819 MB). A write that stays blocked for `MA2H_WRITE_STALL_SECONDS` now fails, and hyper drops
//! the connection and everything it held; a slow reader that keeps taking bytes is never cut off.
//!
//! `axum::serve` has none of these knobs, and without them a client that sends half a request
//! and waits — a thousand times — holds every file descriptor the process has (issue 13 item 3).
//! Long-polls are unaffected: a parked `?wait=` request is in its handler, past the header
//! deadline, and its body (none) was read at once.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::Request;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use ma2h_core::kernel::settings::ServerSettings;
use ma2h_http::extract::{BodyTimeout, ClientIp};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// How long a shutdown waits for in-flight requests (parked long-polls are released at once by
/// the change feed, so this bounds only genuinely slow work).
const DRAIN_LIMIT: Duration = Duration::from_secs(10);
/// File descriptors kept back from the connection cap for the store, logs and outbound pushes.
const RESERVED_FDS: u64 = 128;

/// Serve `app` on `listener` until `shutdown` resolves, then stop accepting and let in-flight
/// requests finish (for at most [`DRAIN_LIMIT`]).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServerSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let max = effective_max_connections(limits.max_connections);
    if max < limits.max_connections {
        tracing::warn!(
            configured = limits.max_connections,
            effective = max,
            "connection cap lowered to fit the file-descriptor limit"
        );
    }
    let slots = Arc::new(Semaphore::new(max));
    let per_ip = PerIp::new(limits.max_connections_per_ip);
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    tokio::pin!(shutdown);
    loop {
        // Over the global cap, wait before accepting: newcomers queue in the kernel's backlog.
        let permit = tokio::select! {
            () = &mut shutdown => break,
            p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning on the error.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(ip_slot) = per_ip.try_claim(peer.ip()) else {
            tracing::warn!(peer = %peer.ip(), "closing a connection over the per-address cap");
            continue; // dropping the stream closes it
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let body_timeout = limits.body_timeout;
        let client = ClientIp(peer.ip());
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let mut req = req.map(|b| Body::new(Deadline::new(b, body_timeout)));
            req.extensions_mut().insert(client);
            app.clone().oneshot(req)
        });
        let stream = WriteStall::new(stream, limits.write_stall);
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop((permit, ip_slot));
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_LIMIT, graceful.shutdown()).await.is_err() {
        tracing::warn!("in-flight requests still running after the drain limit; exiting anyway");
    }
    Ok(())
}

/// The configured cap, lowered to fit under the soft `RLIMIT_NOFILE` (after raising the soft
/// limit to the hard one, which an unprivileged process may do).
#[allow(unsafe_code)] // libc's rlimit calls; see SAFETY below
fn effective_max_connections(configured: usize) -> usize {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit/setrlimit only read/write the struct we pass.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return configured;
            }
            if lim.rlim_cur < lim.rlim_max {
                let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    lim.rlim_cur = lim.rlim_max;
                }
            }
        }
        let room = usize::try_from(lim.rlim_cur.saturating_sub(RESERVED_FDS).max(1)).unwrap_or(usize::MAX);
        configured.min(room)
    }
    #[cfg(not(unix))]
    configured
}

/// Open connections per client address.
#[derive(Clone)]
struct PerIp {
    cap: usize,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One claimed connection slot of an address; released on drop.
struct IpSlot {
    ip: IpAddr,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl PerIp {
    fn new(cap: usize) -> Self {
        Self { cap, open: Arc::default() }
    }

    fn try_claim(&self, ip: IpAddr) -> Option<IpSlot> {
        let mut open = self.open.lock().expect("per-ip map poisoned");
        let n = open.entry(ip).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(IpSlot { ip, open: self.open.clone() })
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().expect("per-ip map poisoned");
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A connection whose writes must make progress: a write or flush that stays blocked for `limit`
/// fails with `TimedOut`. The clock restarts at every write the socket accepts.
struct WriteStall<S> {
    inner: S,
    limit: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> WriteStall<S> {
    fn new(inner: S, limit: Duration) -> Self {
        Self { inner, limit, stalled: None }
    }

    /// The inner write is pending: pending too, until the stall deadline passes.
    fn stall<T>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        let limit = self.limit;
        let sleep = self.stalled.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client took nothing within MA2H_WRITE_STALL_SECONDS",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(&mut self, r: Poll<std::io::Result<T>>, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        match r {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.stall(cx),
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WriteStall<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteStall<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progressed(r, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progressed(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.progressed(r, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.progressed(r, cx)
    }
}

/// A request body that must arrive in full within a deadline counted from the headers; after it,
/// reading fails with [`BodyTimeout`] (a 408 from the Router's body extractor).
struct Deadline {
    inner: Incoming,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Deadline {
    fn new(inner: Incoming, limit: Duration) -> Self {
        Self { inner, sleep: Box::pin(tokio::time::sleep(limit)) }
    }
}

impl http_body::Body for Deadline {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match this.sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimeout)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_over_its_cap_is_refused_until_a_slot_is_released() {
        let per_ip = PerIp::new(2);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        let a = per_ip.try_claim(ip).unwrap();
        let _b = per_ip.try_claim(ip).unwrap();
        assert!(per_ip.try_claim(ip).is_none());
        assert!(per_ip.try_claim(other).is_some(), "another address has its own slots");
        drop(a);
        assert!(per_ip.try_claim(ip).is_some());
    }

    #[tokio::test]
    async fn a_write_nobody_takes_fails_after_the_stall_limit_and_a_slow_reader_is_never_cut() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A pipe with a 1 KiB buffer: writes block once the reader stops taking bytes.
        let (client, server) = tokio::io::duplex(1024);
        let mut stalled = WriteStall::new(server, Duration::from_millis(200));
        let started = std::time::Instant::now();
        let err = stalled.write_all(&[0u8; 64 * 1024]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(200));
        drop(client);

        // A reader that takes 1 KiB every 5 ms needs over 300 ms for 64 KiB — past the limit in
        // total, never stalled for it: the whole write goes through.
        let (mut client, server) = tokio::io::duplex(1024);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                match client.read(&mut buf).await {
                    Ok(0) | Err(_) => break got.len(),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        });
        let mut slow = WriteStall::new(server, Duration::from_millis(200));
        slow.write_all(&[1u8; 64 * 1024]).await.unwrap();
        drop(slow);
        assert_eq!(reader.await.unwrap(), 64 * 1024);
    }

    #[test]
    fn the_connection_cap_fits_the_descriptor_limit() {
        assert!(effective_max_connections(usize::MAX) < usize::MAX);
        assert_eq!(effective_max_connections(1), 1);
    }
}
