//! A Linux bridge for tests whose processes live in network namespaces: addresses in
//! 10.200.X.0/24 (X picked free among the bridges that exist), the bridge itself at
//! 10.200.X.1. Deleted when dropped. Needs root; [`TestBridge::create`] says why not.

use std::net::Ipv4Addr;
use std::process::Command;

/// A bridge `hrtX` with 10.200.X.1/24.
pub(crate) struct TestBridge {
    /// Its name.
    pub(crate) name: String,
    /// Its address: where servers for the namespaces listen.
    pub(crate) gateway: Ipv4Addr,
}

impl TestBridge {
    /// Makes a bridge, or says why one cannot be made here (not root, no `ip`).
    pub(crate) fn create() -> Result<TestBridge, String> {
        if !nix_is_root() {
            return Err("network namespaces need root".into());
        }
        // The bridge's name doubles as the lock on its subnet: `ip link add` fails
        // when another test (or test process) holds it.
        let start = std::process::id() % 200;
        for k in 0..200 {
            let x = 20 + (start + k) % 200;
            let name = format!("hrt{x}");
            if !ip(&["link", "add", &name, "type", "bridge"]) {
                continue;
            }
            let bridge = TestBridge {
                name: name.clone(),
                gateway: Ipv4Addr::new(10, 200, x as u8, 1),
            };
            let cidr = format!("{}/24", bridge.gateway);
            if !(ip(&["addr", "add", &cidr, "dev", &name]) && ip(&["link", "set", &name, "up"])) {
                return Err(format!("cannot set up bridge {name}"));
            }
            return Ok(bridge);
        }
        Err("no free 10.200.X.0/24 bridge (`ip link add ... type bridge` failed 200 times)".into())
    }

    /// Host `n` of the bridge's /24.
    pub(crate) fn host(&self, n: u8) -> Ipv4Addr {
        let [a, b, c, _] = self.gateway.octets();
        Ipv4Addr::new(a, b, c, n)
    }
}

impl Drop for TestBridge {
    fn drop(&mut self) {
        ip(&["link", "del", &self.name]);
    }
}

fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}
