//! One network namespace per pod, attached to the test's bridge through a veth pair:
//! made with `ip` (iproute2), as a CNI bridge plugin would make it.

use std::process::Command;

/// A pod's network namespace: its name, the host end of its veth pair and its address.
#[derive(Debug, Clone)]
pub(crate) struct PodNet {
    /// `ip netns` name.
    pub(crate) ns: String,
    /// The veth end left on the host, attached to the bridge.
    pub(crate) host_end: String,
    /// The pod's address on the bridge's /24.
    pub(crate) ip: String,
}

/// Runs `ip ARGS`; an error names the command and what it printed.
pub(crate) fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl PodNet {
    /// Namespace `<prefix><n>` with `eth0` at `<subnet>.<10 + n>/24` on `bridge`, the
    /// default route via `<subnet>.1` (the bridge's address). `n` below 240.
    pub(crate) fn create(
        prefix: &str,
        n: u32,
        bridge: &str,
        subnet: &str,
    ) -> Result<PodNet, String> {
        if n >= 240 {
            return Err("this agent gives out at most 240 pod addresses".into());
        }
        let net = PodNet {
            ns: format!("{prefix}{n}"),
            host_end: format!("{prefix}v{n}"),
            ip: format!("{subnet}.{}", 10 + n),
        };
        let peer = format!("{prefix}p{n}");
        let cidr = format!("{}/24", net.ip);
        let gateway = format!("{subnet}.1");
        let steps: [&[&str]; 10] = [
            &["netns", "add", &net.ns],
            &[
                "link",
                "add",
                &net.host_end,
                "type",
                "veth",
                "peer",
                "name",
                &peer,
            ],
            &["link", "set", &peer, "netns", &net.ns],
            &["link", "set", &net.host_end, "master", bridge],
            &["link", "set", &net.host_end, "up"],
            &["-n", &net.ns, "link", "set", "lo", "up"],
            &["-n", &net.ns, "link", "set", &peer, "name", "eth0"],
            &["-n", &net.ns, "addr", "add", &cidr, "dev", "eth0"],
            &["-n", &net.ns, "link", "set", "eth0", "up"],
            &["-n", &net.ns, "route", "add", "default", "via", &gateway],
        ];
        for step in steps {
            if let Err(e) = ip(step) {
                net.remove();
                return Err(e);
            }
        }
        Ok(net)
    }

    /// Deletes the namespace (and with it both ends of the veth pair). Errors are
    /// ignored: this also tidies up after a half-made namespace.
    pub(crate) fn remove(&self) {
        let _ = ip(&["netns", "del", &self.ns]);
        let _ = ip(&["link", "del", &self.host_end]);
    }
}
