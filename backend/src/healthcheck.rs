//! `anteroom healthcheck`: asks a running server's `/healthz`, for container health checks on
//! images that carry no curl.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// GETs `/healthz` on `addr` (an unspecified IP such as 0.0.0.0 means this host); `Ok` on 200.
pub fn check(addr: SocketAddr) -> Result<(), String> {
    let mut target = addr;
    if target.ip().is_unspecified() {
        target.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let timeout = Duration::from_secs(3);
    let mut stream = TcpStream::connect_timeout(&target, timeout).map_err(|e| format!("connect {target}: {e}"))?;
    stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    stream
        .write_all(format!("GET /healthz HTTP/1.0\r\nHost: {target}\r\n\r\n").as_bytes())
        .map_err(|e| format!("send: {e}"))?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head).map_err(|e| format!("read: {e}"))?;
    let status_line = String::from_utf8_lossy(&head[..n]);
    if status_line.split_whitespace().nth(1) == Some("200") {
        Ok(())
    } else {
        Err(format!("unhealthy: {}", status_line.lines().next().unwrap_or_default()))
    }
}
