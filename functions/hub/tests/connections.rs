//! Slow and idle clients against the real binary (issue 13 items 3 and 12): a client that sends
//! half a request, trickles a body or idles on keep-alive loses its connection; one address
//! cannot take every connection; long-polls still hold to their maximum; and a shutdown
//! releases parked long-polls at once.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use support::*;

const FAST: &[(&str, &str)] = &[("MA2H_HEADER_TIMEOUT_SECONDS", "1"), ("MA2H_BODY_TIMEOUT_SECONDS", "1")];

/// Read until the peer closes (or `limit` passes); returns what arrived and how long it took.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let start = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                panic!("still open after {limit:?}; got {:?}", String::from_utf8_lossy(&out))
            }
            Err(_) => break, // reset: closed too
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), start.elapsed())
}

#[test]
fn half_sent_headers_are_cut_off_at_the_header_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::start_with(dir.path(), FAST);
    let mut s = TcpStream::connect(&hub.addr).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").unwrap(); // never the blank line
    let (_, took) = read_until_closed(&mut s, Duration::from_secs(5));
    assert!(took >= Duration::from_millis(800), "closed too early: {took:?}");
}

#[test]
fn an_idle_keep_alive_connection_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Hub::start_with(dir.path(), FAST);
    let mut s = TcpStream::connect(&hub.addr).unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let (text, _) = read_until_closed(&mut s, Duration::from_secs(5));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

#[test]
fn a_trickled_body_gets_a_408_envelope_at_the_body_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let key = agent["api_key"].as_str().unwrap();
    let hub = Hub::start_with(dir.path(), FAST);
    let mut s = TcpStream::connect(&hub.addr).unwrap();
    let head = format!(
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"ma2h"
    );
    s.write_all(head.as_bytes()).unwrap();
    let (text, took) = read_until_closed(&mut s, Duration::from_secs(5));
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"request_timeout\""), "{text}");
    assert!(took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn one_address_cannot_hold_every_connection() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("MA2H_MAX_CONNECTIONS_PER_IP", "4"), ("MA2H_HEADER_TIMEOUT_SECONDS", "30")];
    let hub = Hub::start_with(dir.path(), &env);
    // four idle connections from 127.0.0.1 take that address's share…
    let _held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(&hub.addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    // …a fifth from it is closed at once…
    let mut fifth = TcpStream::connect(&hub.addr).unwrap();
    let _ = fifth.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    let (text, took) = read_until_closed(&mut fifth, Duration::from_secs(5));
    assert!(text.is_empty() && took < Duration::from_secs(2), "{text:?} after {took:?}");
    // …while another client (from 127.0.0.2, also loopback) is served.
    let mut other = connect_from("127.0.0.2", &hub.addr);
    other.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let (text, _) = read_until_closed(&mut other, Duration::from_secs(5));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

/// A blocking stream to `addr` whose source address is `from`.
fn connect_from(from: &str, addr: &str) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        socket.connect(addr.parse().unwrap()).await.unwrap()
    });
    let std = stream.into_std().unwrap();
    std.set_nonblocking(false).unwrap();
    std
}

#[test]
fn a_long_poll_outlives_the_header_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let key = agent["api_key"].as_str().unwrap().to_owned();
    let hub = Hub::start_with(dir.path(), FAST);
    let (status, ack) = submit(&hub, &key, &ask_envelope("lp"));
    assert_eq!(status, 202, "{ack}");
    let start = Instant::now();
    let (status, body) = get(&hub, &format!("/v1/messages/{}?wait=3", ack["id"].as_str().unwrap()), &key);
    assert_eq!((status, body["status"].as_str()), (200, Some("open")));
    assert!(start.elapsed() >= Duration::from_millis(2800), "{:?}", start.elapsed());
}

#[test]
fn shutdown_answers_parked_long_polls_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let key = agent["api_key"].as_str().unwrap().to_owned();
    let mut hub = Hub::start(dir.path());
    let (_, ack) = submit(&hub, &key, &ask_envelope("sd"));
    let path = format!("/v1/messages/{}?wait=30", ack["id"].as_str().unwrap());
    let addr = hub.addr.clone();
    let poll = std::thread::spawn(move || try_request(&addr, "GET", &path, Some(&key), None));
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    // SAFETY: signalling our own child process.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(hub.child.id() as i32, libc::SIGTERM)
    };
    let polled = poll.join().unwrap();
    assert_eq!(polled.map(|(s, b)| (s, b["status"].clone())), Some((200, "open".into())));
    let exit = hub.child.wait().unwrap();
    assert!(exit.success(), "{exit}");
    assert!(start.elapsed() < Duration::from_secs(5), "shutdown took {:?}", start.elapsed());
}
