//! Network namespaces for local shards (`--shard-netns BRIDGE`): each shard process
//! gets a namespace of its own with its own address on a Linux bridge the caller made,
//! so that, as far as the target can tell, the shards are different hosts (different
//! source addresses, separate connection tables and ephemeral ports).
//!
//! Built with the `ip` command (iproute2), as an administrator would; needs root.

use std::net::Ipv4Addr;
use std::process::Command;

/// Why a namespace could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// `ip` could not be run.
    #[error("`ip {args}` failed: {source}")]
    IpSpawn {
        /// Its arguments.
        args: String,
        /// Why it could not run.
        #[source]
        source: std::io::Error,
    },
    /// `ip` ran and failed.
    #[error("`ip {args}` failed: {stderr}")]
    Ip {
        /// Its arguments.
        args: String,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// The bridge has no IPv4 address to share.
    #[error("bridge {bridge} has no IPv4 address (give it one, e.g. 10.200.1.1/24)")]
    NoAddress {
        /// The bridge's name.
        bridge: String,
    },
}

/// A Linux bridge with an IPv4 address: the shards' network.
#[derive(Debug, Clone)]
pub struct Bridge {
    /// Its name.
    pub name: String,
    /// Its own address: the shards' default route, where the coordinator listens.
    pub gateway: Ipv4Addr,
    /// Prefix length of its subnet.
    pub prefix: u8,
}

impl Bridge {
    /// The bridge called `name`, with its first IPv4 address.
    pub fn open(name: &str) -> Result<Bridge, NetnsError> {
        let out = ip(&["-4", "-o", "addr", "show", "dev", name])?;
        // `3: br0    inet 10.200.1.1/24 brd ... scope global br0`
        let cidr = out
            .split_whitespace()
            .skip_while(|w| *w != "inet")
            .nth(1)
            .ok_or_else(|| NetnsError::NoAddress {
                bridge: name.into(),
            })?;
        let (addr, prefix) = cidr.split_once('/').unwrap_or((cidr, "32"));
        Ok(Bridge {
            name: name.into(),
            gateway: addr.parse().map_err(|_| NetnsError::NoAddress {
                bridge: name.into(),
            })?,
            prefix: prefix.parse().unwrap_or(32),
        })
    }

    /// Host number `n` of the bridge's subnet (`n` = 100 on 10.200.1.1/24 is 10.200.1.100).
    pub fn host(&self, n: u32) -> Ipv4Addr {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix))
            .unwrap_or(0);
        Ipv4Addr::from((u32::from(self.gateway) & mask) | (n & !mask))
    }
}

/// A network namespace with one address on a bridge; deleted (with its veth pair)
/// when dropped.
#[derive(Debug)]
pub struct Netns {
    /// Its name (`ip netns`).
    pub name: String,
    /// Its address.
    pub addr: Ipv4Addr,
}

impl Netns {
    /// Makes namespace `name` (at most 12 characters) with address `addr` on
    /// `bridge`, its default route through the bridge.
    pub fn attach(bridge: &Bridge, name: &str, addr: Ipv4Addr) -> Result<Netns, NetnsError> {
        ip(&["netns", "add", name])?;
        // From here on, dropping the namespace undoes everything.
        let ns = Netns {
            name: name.into(),
            addr,
        };
        let (outer, inner) = (format!("{name}o"), format!("{name}i"));
        let cidr = format!("{addr}/{}", bridge.prefix);
        let gateway = bridge.gateway.to_string();
        ip(&[
            "link", "add", &outer, "type", "veth", "peer", "name", &inner,
        ])?;
        ip(&["link", "set", &inner, "netns", name])?;
        ip(&["link", "set", &outer, "master", &bridge.name, "up"])?;
        ip(&["-n", name, "addr", "add", &cidr, "dev", &inner])?;
        ip(&["-n", name, "link", "set", &inner, "up"])?;
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        ip(&["-n", name, "route", "add", "default", "via", &gateway])?;
        Ok(ns)
    }

    /// `program` to be run inside the namespace.
    pub fn command(&self, program: &std::path::Path) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name]).arg(program);
        cmd
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting the namespace deletes the veth end in it, and so its peer.
        let _ = ip(&["netns", "del", &self.name]);
        let _ = ip(&["link", "del", &format!("{}o", self.name)]);
    }
}

/// Runs `ip args`, returning its stdout.
fn ip(args: &[&str]) -> Result<String, NetnsError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| NetnsError::IpSpawn {
            args: args.join(" "),
            source,
        })?;
    if !out.status.success() {
        return Err(NetnsError::Ip {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_numbered_within_the_bridge_subnet() {
        let b = Bridge {
            name: "b".into(),
            gateway: "10.200.7.1".parse().unwrap(),
            prefix: 24,
        };
        assert_eq!(b.host(100), "10.200.7.100".parse::<Ipv4Addr>().unwrap());
        assert_eq!(b.host(356), "10.200.7.100".parse::<Ipv4Addr>().unwrap());
        let wide = Bridge { prefix: 16, ..b };
        assert_eq!(wide.host(258), "10.200.1.2".parse::<Ipv4Addr>().unwrap());
    }
}
