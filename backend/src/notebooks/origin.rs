//! Where notebooks are served: an origin of their own per job (`notebook_origin`), never the
//! portal's. A notebook's pages are user code; on the portal's origin they would run with the
//! session of whoever views them (JupyterHub's `subdomain_host` and GitHub's user-content
//! domain answer the same problem the same way).
//!
//! The setting is a URL whose host holds `{job}` once: `https://{job}.nb.example.org` (a wildcard
//! DNS name and certificate). Unset, notebooks open at `http://j{job}.localhost:<port>`, which
//! Chromium and Firefox resolve to loopback by themselves: it works on a laptop, and through an
//! SSH tunnel to the server's port, with no DNS at all. Pure: no I/O.

/// The host pattern of the notebook origins and how browsers reach them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotebookOrigin {
    /// Whether browsers reach notebooks over TLS.
    https: bool,
    /// The host before the job id, lowercase (`j` in `j{job}.localhost`).
    prefix: String,
    /// The host after the job id, lowercase (`.localhost`).
    suffix: String,
    /// The port browsers use, when not the scheme's default.
    port: Option<u16>,
    /// The setting said `:{port}`: the port the server listens on, known once it is bound.
    listen_port: bool,
    /// The portal's origin, for the links back from a notebook origin's own pages (an expired
    /// link, a stopped job); `None` when it is not known.
    portal: Option<String>,
}

/// The placeholder the setting's host must hold once.
pub const JOB_PLACEHOLDER: &str = "{job}";

/// The placeholder a setting's port may be: the port the server listens on (a development box
/// whose notebooks are reached at `http://{job}.nb.lab.internal:{port}`).
pub const PORT_PLACEHOLDER: &str = "{port}";

impl NotebookOrigin {
    /// Reads the setting: `http(s)://<host with {job}>[:port or :{port}][/]`, no path, query or
    /// user part.
    /// The error says what is wrong.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("`{text}` is not a URL such as https://{{job}}.nb.example.org"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(format!("`{text}`: the scheme must be http or https")),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest).to_ascii_lowercase();
        if authority.contains(['/', '?', '#', '@', ' ']) {
            return Err(format!(
                "`{text}` must be only a scheme, a host holding {JOB_PLACEHOLDER} and an optional port"
            ));
        }
        let (host, port, listen_port) = match authority.rsplit_once(':') {
            Some((host, PORT_PLACEHOLDER)) => (host.to_owned(), None, true),
            Some((host, port)) => {
                let port = port
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("`{text}`: `{port}` is not a port"))?;
                (host.to_owned(), Some(port), false)
            }
            None => (authority.clone(), None, false),
        };
        let Some((prefix, suffix)) = host.split_once(JOB_PLACEHOLDER) else {
            return Err(format!(
                "`{text}`: the host must hold {JOB_PLACEHOLDER} (each job gets a host of its own)"
            ));
        };
        if suffix.contains(JOB_PLACEHOLDER) {
            return Err(format!("`{text}`: the host must hold {JOB_PLACEHOLDER} once"));
        }
        // The job id sits inside one DNS label, and the host is a DNS name (no address: an IP
        // cannot hold a label per job).
        let sample = format!("{prefix}1{suffix}");
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if !suffix.contains('.') {
            return Err(format!(
                "`{text}`: {JOB_PLACEHOLDER} must not be in the last label (the domain is what a wildcard DNS name and certificate cover)"
            ));
        }
        if !sample.split('.').all(label_ok) {
            return Err(format!(
                "`{text}`: `{host}` is not a host name with {JOB_PLACEHOLDER} in one label"
            ));
        }
        let default_port = if https { 443 } else { 80 };
        Ok(NotebookOrigin {
            https,
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            port: port.filter(|p| *p != default_port),
            listen_port,
            portal: None,
        })
    }

    /// Where notebooks are served by a server listening on `listen`: the configured
    /// `notebook_origin`, or the laptop default on that port; with the portal's origin for
    /// links back (`public_url`, else the listen address, loopback when it is a wildcard).
    pub fn resolve(
        configured: Option<&NotebookOrigin>,
        public_url: Option<&str>,
        listen: std::net::SocketAddr,
    ) -> Self {
        let mut origin = configured.cloned().unwrap_or_else(|| Self::laptop(listen.port()));
        if origin.listen_port {
            let default_port = if origin.https { 443 } else { 80 };
            origin.port = Some(listen.port()).filter(|p| *p != default_port);
        }
        origin.portal = Some(public_url.map(str::to_owned).unwrap_or_else(|| {
            let ip = match listen.ip() {
                ip if ip.is_unspecified() && ip.is_ipv4() => std::net::IpAddr::from([127, 0, 0, 1]),
                ip if ip.is_unspecified() => std::net::IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
                ip => ip,
            };
            format!("http://{}", std::net::SocketAddr::new(ip, listen.port()))
        }));
        origin
    }

    /// The portal's origin, for links back to it.
    pub fn portal(&self) -> Option<&str> {
        self.portal.as_deref()
    }

    /// The default when the setting is unset: `http://j{job}.localhost:<port>`, `port` being the
    /// one the server listens on.
    pub fn laptop(port: u16) -> Self {
        NotebookOrigin {
            https: false,
            prefix: "j".into(),
            suffix: ".localhost".into(),
            port: (port != 80).then_some(port),
            listen_port: true,
            portal: None,
        }
    }

    /// Whether browsers reach notebooks over TLS (the notebook cookie is then `Secure`).
    pub fn https(&self) -> bool {
        self.https
    }

    /// Job `job`'s host, without the port.
    pub fn host(&self, job: i64) -> String {
        format!("{}{job}{}", self.prefix, self.suffix)
    }

    /// Job `job`'s origin as browsers write it in `Origin`: `scheme://host[:port]`.
    pub fn origin(&self, job: i64) -> String {
        let scheme = if self.https { "https" } else { "http" };
        match self.port {
            Some(port) => format!("{scheme}://{}:{port}", self.host(job)),
            None => format!("{scheme}://{}", self.host(job)),
        }
    }

    /// The job whose notebook origin `host` (a `Host` header: name and optional port) is, if it
    /// is one. Only a plain decimal id above zero matches (no sign, no leading zero), so one job
    /// has exactly one host.
    pub fn job_of_host(&self, host: &str) -> Option<i64> {
        let host = host.trim();
        // A name, never a bracketed IPv6 address: the port is what follows the last colon.
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        };
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        let id = name
            .strip_prefix(self.prefix.as_str())?
            .strip_suffix(self.suffix.as_str())?;
        if id.is_empty() || id.starts_with('0') || !id.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        id.parse::<i64>().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_laptop_default_serves_job_hosts_under_localhost_on_the_server_s_port() {
        let o = NotebookOrigin::laptop(8080);
        assert_eq!(o.origin(7), "http://j7.localhost:8080");
        assert_eq!(o.job_of_host("j7.localhost:8080"), Some(7));
        assert_eq!(o.job_of_host("J7.LOCALHOST"), Some(7));
        assert_eq!(o.job_of_host("j7.localhost.:8080"), Some(7));
        for not_a_notebook in [
            "127.0.0.1:8080",
            "localhost:8080",
            "j.localhost",
            "j07.localhost",
            "j-7.localhost",
            "j+7.localhost",
            "j7x.localhost",
            "xj7.localhost",
            "j7.localhost.evil.example",
            "j99999999999999999999.localhost",
            "[::1]:8080",
            "",
        ] {
            assert_eq!(o.job_of_host(not_a_notebook), None, "{not_a_notebook}");
        }
        assert_eq!(NotebookOrigin::laptop(80).origin(3), "http://j3.localhost");
    }

    #[test]
    fn the_resolved_origin_links_back_to_the_public_url_or_the_listen_address() {
        let listen: std::net::SocketAddr = "0.0.0.0:9000".parse().unwrap();
        let laptop = NotebookOrigin::resolve(None, None, listen);
        assert_eq!(laptop.origin(1), "http://j1.localhost:9000");
        assert_eq!(laptop.portal(), Some("http://127.0.0.1:9000"));
        let configured = NotebookOrigin::parse("https://{job}.nb.example.org").unwrap();
        let real = NotebookOrigin::resolve(Some(&configured), Some("https://anteroom.example.org"), listen);
        assert_eq!(real.origin(1), "https://1.nb.example.org");
        assert_eq!(real.portal(), Some("https://anteroom.example.org"));
    }

    #[test]
    fn a_configured_origin_keeps_its_scheme_and_port_and_matches_only_its_pattern() {
        let o = NotebookOrigin::parse("https://{job}.NB.example.org/").unwrap();
        assert!(o.https());
        assert_eq!(o.origin(12), "https://12.nb.example.org");
        assert_eq!(o.job_of_host("12.nb.example.org"), Some(12));
        assert_eq!(o.job_of_host("12.nb.example.org:443"), Some(12));
        assert_eq!(o.job_of_host("anteroom.example.org"), None);
        assert_eq!(o.job_of_host("12.nb.example.org.evil"), None);
        let o = NotebookOrigin::parse("http://nb-{job}.lab.internal:8443").unwrap();
        assert_eq!(o.origin(5), "http://nb-5.lab.internal:8443");
        assert_eq!(o.job_of_host("nb-5.lab.internal:8443"), Some(5));
        let o = NotebookOrigin::parse("https://{job}.nb.example.org:443").unwrap();
        assert_eq!(o.origin(1), "https://1.nb.example.org", "the default port is left out");
        // `{port}`: the port the server listens on, once bound.
        let o = NotebookOrigin::parse("http://{job}.nb.lab.internal:{port}").unwrap();
        let bound = NotebookOrigin::resolve(Some(&o), None, "127.0.0.1:41234".parse().unwrap());
        assert_eq!(bound.origin(3), "http://3.nb.lab.internal:41234");
        assert_eq!(bound.job_of_host("3.nb.lab.internal:41234"), Some(3));
    }

    #[test]
    fn a_setting_without_one_job_label_under_a_domain_is_refused_with_the_reason() {
        for (bad, says) in [
            ("nb.example.org", "not a URL"),
            ("ftp://{job}.nb.example.org", "scheme"),
            ("https://nb.example.org", "must hold {job}"),
            ("https://{job}.{job}.example.org", "once"),
            ("https://{job}.nb.example.org/path", "only a scheme"),
            ("https://user@{job}.nb.example.org", "only a scheme"),
            ("https://{job}.nb.example.org:0", "not a port"),
            ("https://{job}.nb.example.org:99999", "not a port"),
            ("https://nb.{job}", "last label"),
            ("https://{job}", "last label"),
            ("https://a_{job}.example.org", "not a host name"),
            ("https://{job}..example.org", "not a host name"),
        ] {
            let e = NotebookOrigin::parse(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
