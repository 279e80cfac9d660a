//! A std-only program that exercises what a Rust binary needs from its
//! platform at start-up: random keys for a HashMap (`ProcessPrng` on
//! Windows), the environment, and a loopback TCP connection. `cargo xtask
//! cross-check --probe-only` builds it for a target and runs it there, to
//! prove the toolchain, the linker and the runner before the wrapper
//! itself builds for that target.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

fn main() {
    let mut seen = HashMap::new();
    seen.insert("os", std::env::consts::OS);
    seen.insert("arch", std::env::consts::ARCH);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("local address").port();
    let mut client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let (mut server, _) = listener.accept().expect("accept");
    client.write_all(b"ping").expect("write");
    let mut buf = [0u8; 4];
    server.read_exact(&mut buf).expect("read");
    assert_eq!(&buf, b"ping");
    println!(
        "probe ok: {} {}, loopback TCP on port {port}",
        seen["os"], seen["arch"]
    );
}
