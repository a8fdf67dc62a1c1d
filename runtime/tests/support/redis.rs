//! A redis-server of a test's own (Debian's `redis-server`, which `scripts/install-peers.sh`
//! installs as root): on a free 127.0.0.1 port, in memory only (`--save ''`, no append-only
//! file), optionally with a password, killed with its process group when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::peers::{PeerProcess, free_port, try_spawn_http_peer, which};

/// How long redis-server gets to answer PING after it starts (or restarts).
pub const START_DEADLINE: Duration = Duration::from_secs(30);

fn redis_server() -> PathBuf {
    which("redis-server").unwrap_or_else(|| {
        panic!(
            "`redis-server` is not on PATH: run `scripts/install-peers.sh` as root (it installs \
             the redis-server package) or `apt-get install redis-server`"
        )
    })
}

/// One redis-server of the test, killed (the whole process group) when dropped.
pub struct Redis {
    peer: Option<PeerProcess>,
    port: u16,
    password: Option<&'static str>,
}

impl Redis {
    /// Without a password.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// Requiring `password` (`--requirepass`) when given. Three ports are tried (another
    /// process may take a free port before redis-server binds it).
    pub fn start_with(password: Option<&'static str>) -> Self {
        let mut errors = Vec::new();
        for _ in 0..3 {
            let port = free_port();
            match Self::spawn(port, password) {
                Ok(peer) => {
                    return Self {
                        peer: Some(peer),
                        port,
                        password,
                    };
                }
                Err(e) => errors.push(e),
            }
        }
        panic!("redis-server did not start:\n{}", errors.join("\n\n"));
    }

    fn spawn(port: u16, password: Option<&str>) -> Result<PeerProcess, String> {
        let port_text = port.to_string();
        let mut args = vec![
            "--port",
            &port_text,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ];
        if let Some(p) = password {
            args.extend(["--requirepass", p]);
        }
        let peer = try_spawn_http_peer(redis_server(), &args, &[], port)?;
        wait_for_ping(port)?;
        Ok(peer)
    }

    /// `redis://[:password@]127.0.0.1:port`.
    pub fn url(&self) -> String {
        match self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills it (no grace): what is in it is gone.
    pub fn kill(&mut self) {
        if let Some(mut peer) = self.peer.take() {
            peer.kill();
        }
    }

    /// Starts it again on the same port, empty (nothing is saved), within [`START_DEADLINE`].
    pub fn restart(&mut self) {
        self.kill();
        let until = Instant::now() + START_DEADLINE;
        loop {
            match Self::spawn(self.port, self.password) {
                Ok(peer) => {
                    self.peer = Some(peer);
                    return;
                }
                Err(e) if Instant::now() > until => panic!("redis-server did not restart: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// A raw client, to look at the keys.
    pub async fn client(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .expect("a raw connection to the test's redis-server")
    }
}

/// Until redis-server on `port` answers PING (any answer: `-NOAUTH` counts), within
/// [`START_DEADLINE`].
fn wait_for_ping(port: u16) -> Result<(), String> {
    let until = Instant::now() + START_DEADLINE;
    loop {
        let answered = (|| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
            s.write_all(b"PING\r\n").ok()?;
            let mut buf = [0u8; 64];
            let n = s.read(&mut buf).ok()?;
            (n > 0 && matches!(buf[0], b'+' | b'-')).then_some(())
        })();
        if answered.is_some() {
            return Ok(());
        }
        if Instant::now() > until {
            return Err(format!("redis-server on port {port} did not answer PING"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
