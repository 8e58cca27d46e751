//! Layered configuration: defaults → `anteroom.toml` → `ANTEROOM_*` environment → CLI flags.
//!
//! Every setting is declared once in [`SETTINGS`]; each layer contributes raw strings keyed by
//! the setting's name, and one parse step turns the merged strings into [`Config`]. That keeps
//! the error message for a bad value uniform — it always names the setting *and* the layer it
//! came from — and lets a test drive the whole chain with a fake environment.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Which cluster the server admits jobs into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterKind {
    /// The embedded simulated cluster: the default, so a laptop needs nothing else.
    Sim,
    /// A real Kubernetes cluster with Volcano, through kube.
    Kube,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Readable lines for a terminal.
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

/// A secret value: `Debug` and `Display` never print it, so it cannot leak into logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret string.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself; call only where it is used, never to log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The validated settings the server runs with. `Debug` is written by hand: `database_url`
/// may carry a password (`postgres://user:password@host/db`), so only its scheme is shown.
#[derive(Clone)]
pub struct Config {
    /// Address the HTTP server binds.
    pub listen: SocketAddr,
    /// Directory for the SQLite database and generated secrets.
    pub data_dir: PathBuf,
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    /// Simulated or real cluster.
    pub cluster: ClusterKind,
    /// HS256 key for session tokens; generated and kept in the data dir when unset.
    pub jwt_secret: Option<Secret>,
    /// The signing key before the last rotation: still accepted for verification (never for
    /// signing), so rotating `jwt_secret` does not log everyone out at once.
    pub jwt_previous_secret: Option<Secret>,
    /// Reverse proxies whose `X-Forwarded-For` is believed: behind them the client address
    /// (which the login throttle keys on) is the last address in that header not itself a proxy.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Password of the first admin; generated and printed once when unset.
    pub admin_password: Option<Secret>,
    /// Log line format.
    pub log_format: LogFormat,
    /// `tracing` filter directives, e.g. `info,anteroom=debug`.
    pub log_filter: String,
    /// Days a finished job (with its events) is kept after `finished_at`; 0: for ever.
    pub job_retention_days: u32,
    /// TOML file with the simulated cluster's nodes; `None`: the built-in default cluster.
    pub sim_nodes: Option<PathBuf>,
    /// How long a simulated batch job without `sleep N` runs.
    pub sim_default_runtime_seconds: u64,
    /// How long a deleted simulated job's pods keep their capacity.
    pub sim_termination_grace_seconds: u64,
    /// How long a completed simulated job stays in the simulated cluster (and its table).
    pub sim_finished_retention_seconds: u64,
    /// Where the simulated cluster's running notebooks answer (`http://host:port`, e.g. a
    /// local Jupyter started with `--ServerApp.base_url=/jobs/<id>/open/`, or a stub);
    /// `None`: a page that says the notebook is simulated.
    pub sim_notebook_upstream: Option<String>,
    /// Kubernetes namespace of Anteroom's Volcano jobs (kube cluster): their own, apart from
    /// Anteroom's, so a job's pods share neither its network rules nor its service account.
    pub jobs_namespace: String,
    /// `priorityClassName` of normal jobs in the kube cluster; `None`: the cluster's default.
    pub kube_priority_class_normal: Option<String>,
    /// `priorityClassName` of backfill jobs in the kube cluster (typically a low one, so
    /// Volcano's own preemption picks them first); `None`: the cluster's default.
    pub kube_priority_class_backfill: Option<String>,
    /// `priorityClassName` of normal jobs whose preemption policy is `Never` (a class with
    /// `preemptionPolicy: Never`, so the cluster does not preempt for them either); `None`:
    /// they get [`Config::kube_priority_class_normal`].
    pub kube_priority_class_never: Option<String>,
    /// `imagePullPolicy` of every job container; `None`: Kubernetes' default.
    pub image_pull_policy: Option<ImagePullPolicy>,
    /// Image reference prefixes a job's tasks may use (`registry.example.org/`); empty: any.
    pub allowed_images: Vec<String>,
    /// Volcano's `ttlSecondsAfterFinished` on Anteroom's jobs; `None`: finished jobs stay until
    /// Anteroom deletes them.
    pub kube_ttl_seconds_after_finished: Option<u32>,
    /// Whether the kube adapter keeps every Anteroom queue as a Volcano Queue (parent,
    /// capability, weight, not reclaimable), so a job sent around Anteroom still meets the
    /// tree's caps; off: administrators create the Volcano queues and Anteroom only checks them.
    pub mirror_queues: bool,
    /// Whether `/metrics` carries each user's fair-share factor labelled with their id
    /// (`anteroom_user_fair_share_factor{queue,user_id}`): one series per user and queue, so
    /// off unless an admin opts in.
    pub metrics_user_labels: bool,
    /// The address browsers use to reach the UI, when set: its origin is the only one whose
    /// cookie-authenticated writes are accepted (behind a proxy the `Host` header may not say
    /// it), and an `https` one makes the session cookie `__Host-` and `Secure` and adds HSTS.
    pub public_url: Option<PublicUrl>,
    /// Timers and caps that keep slow or numerous clients from exhausting the server.
    pub http_limits: HttpLimits,
    /// The cluster's own address ranges (pods, services, nodes): webhooks never reach them
    /// unless an admin listed the exact address.
    pub cluster_networks: Vec<ipnet::IpNet>,
    /// Where notebooks are served (`https://{job}.nb.example.org`); `None`: `http://j{job}.localhost`
    /// on the port the server listens on.
    pub notebook_origin: Option<crate::notebooks::origin::NotebookOrigin>,
    /// What one user may hold open through the notebook proxy.
    pub notebook_limits: NotebookLimits,
    /// What the start should warn about once logging is set up (a deprecated setting in use).
    pub warnings: Vec<String>,
}

/// Kubernetes' `imagePullPolicy` of a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImagePullPolicy {
    /// Pull on every start: a moving tag (`:latest`) is always fresh, and the registry checks
    /// the pod's right to the image each time.
    Always,
    /// Pull only when the node does not have the image.
    IfNotPresent,
    /// Never pull: the image must already be on the node.
    Never,
}

impl ImagePullPolicy {
    /// Kubernetes' spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ImagePullPolicy::Always => "Always",
            ImagePullPolicy::IfNotPresent => "IfNotPresent",
            ImagePullPolicy::Never => "Never",
        }
    }
}

/// The public address of the UI (`public_url`), reduced to what the server compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl {
    /// `scheme://host[:port]`, the form browsers send in `Origin` (default port left out).
    pub origin: String,
    /// Whether browsers reach it over TLS.
    pub https: bool,
}

impl PublicUrl {
    /// Parses `http(s)://host[:port][/]`; a path, query, fragment or user part is refused, since
    /// the UI is served at the root and an origin has none of them.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| format!("`{text}` is not a URL such as https://anteroom.example.org"))?;
        let scheme = scheme.to_ascii_lowercase();
        let https = match scheme.as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(format!("`{text}`: the scheme must be http or https")),
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest).to_ascii_lowercase();
        let forbidden = |c: char| matches!(c, '/' | '?' | '#' | '@' | ' ');
        if authority.is_empty() || authority.contains(forbidden) {
            return Err(format!(
                "`{text}` must be only a scheme, a host and an optional port (the UI is served at the root)"
            ));
        }
        let default_port = if https { ":443" } else { ":80" };
        let authority = authority.strip_suffix(default_port).unwrap_or(&authority);
        Ok(PublicUrl {
            origin: format!("{scheme}://{authority}"),
            https,
        })
    }
}

/// The server's protection against slow and numerous clients (`issue: slow clients`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// A connection must send a whole request header within this, or it is closed.
    pub header_read_timeout: std::time::Duration,
    /// Every route but the event stream must answer within this (503 `timeout` after it).
    pub request_timeout: std::time::Duration,
    /// Open connections at most; further ones wait in the kernel's backlog until one closes.
    pub max_connections: usize,
    /// Open event streams per user at most (429 `too_many_streams` beyond).
    pub max_streams_per_user: usize,
}

/// What one user may hold through the notebook proxy, apart from the portal's streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotebookLimits {
    /// Open notebook WebSockets (kernels, terminals) per user.
    pub max_tunnels_per_user: usize,
    /// Proxied notebook requests in flight per user, until their answer is sent.
    pub max_requests_per_user: usize,
    /// A notebook answer (or its headers) that sends nothing for this long is cut.
    pub idle_timeout: std::time::Duration,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Destructured without `..`: a new field does not compile until it is placed here,
        // so nothing is left out, and nothing secret is added without a thought.
        let Config {
            listen,
            data_dir,
            database_url,
            cluster,
            jwt_secret,
            jwt_previous_secret,
            trusted_proxies,
            admin_password,
            log_format,
            log_filter,
            job_retention_days,
            sim_nodes,
            sim_default_runtime_seconds,
            sim_termination_grace_seconds,
            sim_finished_retention_seconds,
            sim_notebook_upstream,
            jobs_namespace,
            kube_priority_class_normal,
            kube_priority_class_backfill,
            kube_priority_class_never,
            image_pull_policy,
            allowed_images,
            kube_ttl_seconds_after_finished,
            mirror_queues,
            metrics_user_labels,
            public_url,
            http_limits,
            cluster_networks,
            notebook_origin,
            notebook_limits,
            warnings,
        } = self;
        let scheme = database_url.split(':').next().unwrap_or_default();
        f.debug_struct("Config")
            .field("listen", listen)
            .field("data_dir", data_dir)
            .field("database_url", &format_args!("{scheme}:***"))
            .field("cluster", cluster)
            .field("jwt_secret", jwt_secret)
            .field("jwt_previous_secret", jwt_previous_secret)
            .field("trusted_proxies", trusted_proxies)
            .field("admin_password", admin_password)
            .field("log_format", log_format)
            .field("log_filter", log_filter)
            .field("job_retention_days", job_retention_days)
            .field("sim_nodes", sim_nodes)
            .field("sim_default_runtime_seconds", sim_default_runtime_seconds)
            .field("sim_termination_grace_seconds", sim_termination_grace_seconds)
            .field("sim_finished_retention_seconds", sim_finished_retention_seconds)
            .field("sim_notebook_upstream", sim_notebook_upstream)
            .field("jobs_namespace", jobs_namespace)
            .field("kube_priority_class_normal", kube_priority_class_normal)
            .field("kube_priority_class_backfill", kube_priority_class_backfill)
            .field("kube_priority_class_never", kube_priority_class_never)
            .field("image_pull_policy", image_pull_policy)
            .field("allowed_images", allowed_images)
            .field("kube_ttl_seconds_after_finished", kube_ttl_seconds_after_finished)
            .field("mirror_queues", mirror_queues)
            .field("metrics_user_labels", metrics_user_labels)
            .field("public_url", public_url)
            .field("http_limits", http_limits)
            .field("cluster_networks", cluster_networks)
            .field("notebook_origin", notebook_origin)
            .field("notebook_limits", notebook_limits)
            .field("warnings", warnings)
            .finish()
    }
}

impl Config {
    /// Settings for tests and embedding: defaults rooted at `data_dir`, nothing read from the
    /// process environment.
    pub fn for_data_dir(data_dir: &Path) -> Self {
        let cli = CliOverrides {
            data_dir: Some(data_dir.to_path_buf()),
            ..CliOverrides::default()
        };
        Config::load(&cli, &|_| None).expect("defaults are valid")
    }
}

mod settings;
pub use settings::{SETTINGS, Setting};

/// Values given on the command line; they win over every other layer.
#[derive(Clone, Debug, Default)]
pub struct CliOverrides {
    /// `--config PATH`: the TOML file to read (default `anteroom.toml` if present).
    pub config_file: Option<PathBuf>,
    /// `--listen`.
    pub listen: Option<String>,
    /// `--data-dir`.
    pub data_dir: Option<PathBuf>,
    /// `--database-url`.
    pub database_url: Option<String>,
    /// `--cluster`.
    pub cluster: Option<String>,
    /// `--log-format`.
    pub log_format: Option<String>,
}

/// Where a raw value came from, for error messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// A key in the TOML file at this path.
    File(PathBuf),
    /// An environment variable (possibly a `_FILE` one).
    Env(String),
    /// A command-line flag.
    Cli(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Env(v) => write!(f, "environment variable {v}"),
            Source::Cli(flag) => write!(f, "command-line flag {flag}"),
        }
    }
}

/// A setting that stops the start, with enough context to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value that does not parse.
    #[error("invalid setting `{name}` (from {origin}): {reason}")]
    Invalid {
        /// The setting's name.
        name: &'static str,
        /// Where the bad value came from.
        origin: Source,
        /// What is wrong with it.
        reason: String,
    },
    /// The TOML file could not be read or parsed.
    #[error("cannot read configuration file {path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A key in the TOML file that is not a setting (likely a typo).
    #[error("unknown setting `{key}` in {path}; known settings: {known}")]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The unknown key.
        key: String,
        /// The known names, comma-separated.
        known: String,
    },
}

type Raw = BTreeMap<&'static str, (String, Source)>;

mod load;

#[cfg(test)]
mod tests;
