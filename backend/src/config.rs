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
    /// TOML file with the simulated cluster's nodes; `None`: the built-in default cluster.
    pub sim_nodes: Option<PathBuf>,
    /// How long a simulated batch job without `sleep N` runs.
    pub sim_default_runtime_seconds: u64,
    /// How long a deleted simulated job's pods keep their capacity.
    pub sim_termination_grace_seconds: u64,
    /// How long a completed simulated job stays in the simulated cluster (and its table).
    pub sim_finished_retention_seconds: u64,
    /// Kubernetes namespace of Anteroom's Volcano jobs (kube cluster).
    pub namespace: String,
    /// `priorityClassName` of normal jobs in the kube cluster; `None`: the cluster's default.
    pub kube_priority_class_normal: Option<String>,
    /// `priorityClassName` of backfill jobs in the kube cluster (typically a low one, so
    /// Volcano's own preemption picks them first); `None`: the cluster's default.
    pub kube_priority_class_backfill: Option<String>,
    /// Volcano's `ttlSecondsAfterFinished` on Anteroom's jobs; `None`: finished jobs stay until
    /// Anteroom deletes them.
    pub kube_ttl_seconds_after_finished: Option<u32>,
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
            sim_nodes,
            sim_default_runtime_seconds,
            sim_termination_grace_seconds,
            sim_finished_retention_seconds,
            namespace,
            kube_priority_class_normal,
            kube_priority_class_backfill,
            kube_ttl_seconds_after_finished,
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
            .field("sim_nodes", sim_nodes)
            .field("sim_default_runtime_seconds", sim_default_runtime_seconds)
            .field("sim_termination_grace_seconds", sim_termination_grace_seconds)
            .field("sim_finished_retention_seconds", sim_finished_retention_seconds)
            .field("namespace", namespace)
            .field("kube_priority_class_normal", kube_priority_class_normal)
            .field("kube_priority_class_backfill", kube_priority_class_backfill)
            .field("kube_ttl_seconds_after_finished", kube_ttl_seconds_after_finished)
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

/// One declared setting: its name in `anteroom.toml`, its environment variable, its default.
#[derive(Debug)]
pub struct Setting {
    /// Key in `anteroom.toml` and in error messages.
    pub name: &'static str,
    /// Environment variable that sets it.
    pub env: &'static str,
    /// Default value, if any (`None`: unset unless a layer sets it).
    pub default: Option<&'static str>,
    /// Whether `<ENV>_FILE` may name a file that holds the value.
    pub secret: bool,
    /// One line for the README's configuration table and `--help`.
    pub help: &'static str,
}

/// Every setting Anteroom knows. The README's configuration table mirrors this list.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "listen",
        env: "ANTEROOM_LISTEN",
        default: Some("127.0.0.1:8080"),
        secret: false,
        help: "address and port the HTTP server binds",
    },
    Setting {
        name: "data_dir",
        env: "ANTEROOM_DATA_DIR",
        default: Some("data"),
        secret: false,
        help: "directory for anteroom.db and generated secrets",
    },
    Setting {
        name: "database_url",
        env: "ANTEROOM_DATABASE_URL",
        default: None,
        secret: true,
        help: "sqlite://PATH or postgres://USER@HOST/DB (default: SQLite in the data dir)",
    },
    Setting {
        name: "cluster",
        env: "ANTEROOM_CLUSTER",
        default: Some("sim"),
        secret: false,
        help: "sim (embedded simulated cluster) or kube (Kubernetes + Volcano)",
    },
    Setting {
        name: "jwt_secret",
        env: "ANTEROOM_JWT_SECRET",
        default: None,
        secret: true,
        help: "HS256 signing key, at least 32 bytes (default: generated into the data dir)",
    },
    Setting {
        name: "jwt_previous_secret",
        env: "ANTEROOM_JWT_PREVIOUS_SECRET",
        default: None,
        secret: true,
        help: "the signing key before a rotation: tokens it signed stay valid until they expire",
    },
    Setting {
        name: "trusted_proxies",
        env: "ANTEROOM_TRUSTED_PROXIES",
        default: Some(""),
        secret: false,
        help: "comma-separated CIDRs of reverse proxies whose X-Forwarded-For gives the client address",
    },
    Setting {
        name: "admin_password",
        env: "ANTEROOM_ADMIN_PASSWORD",
        default: None,
        secret: true,
        help: "password of the first admin (default: generated and printed once)",
    },
    Setting {
        name: "log_format",
        env: "ANTEROOM_LOG_FORMAT",
        default: Some("human"),
        secret: false,
        help: "human or json",
    },
    Setting {
        name: "sim_nodes",
        env: "ANTEROOM_SIM_NODES",
        default: None,
        secret: false,
        help: "TOML file with the simulated cluster's [[node]] entries (default: a built-in cluster)",
    },
    Setting {
        name: "sim_default_runtime_seconds",
        env: "ANTEROOM_SIM_DEFAULT_RUNTIME_SECONDS",
        default: Some("600"),
        secret: false,
        help: "how long a simulated batch job runs unless its command is `sleep N`",
    },
    Setting {
        name: "sim_termination_grace_seconds",
        env: "ANTEROOM_SIM_TERMINATION_GRACE_SECONDS",
        default: Some("5"),
        secret: false,
        help: "how long a deleted simulated job's pods stay Terminating (holding capacity)",
    },
    Setting {
        name: "sim_finished_retention_seconds",
        env: "ANTEROOM_SIM_FINISHED_RETENTION_SECONDS",
        default: Some("3600"),
        secret: false,
        help: "how long a completed simulated job stays in the simulated cluster before it is purged",
    },
    Setting {
        name: "namespace",
        env: "ANTEROOM_NAMESPACE",
        default: Some("default"),
        secret: false,
        help: "Kubernetes namespace for Anteroom's Volcano jobs (cluster = kube)",
    },
    Setting {
        name: "kube_priority_class_normal",
        env: "ANTEROOM_KUBE_PRIORITY_CLASS_NORMAL",
        default: None,
        secret: false,
        help: "priorityClassName of normal jobs' pods and PodGroups (cluster = kube; empty: none)",
    },
    Setting {
        name: "kube_priority_class_backfill",
        env: "ANTEROOM_KUBE_PRIORITY_CLASS_BACKFILL",
        default: None,
        secret: false,
        help: "priorityClassName of backfill jobs' pods and PodGroups (cluster = kube; empty: none)",
    },
    Setting {
        name: "kube_ttl_seconds_after_finished",
        env: "ANTEROOM_KUBE_TTL_SECONDS_AFTER_FINISHED",
        default: None,
        secret: false,
        help: "Volcano removes a finished job after this many seconds (cluster = kube; empty: never)",
    },
    Setting {
        name: "log",
        env: "ANTEROOM_LOG",
        default: Some("info,sqlx=warn,sea_orm=warn"),
        secret: false,
        help: "log filter directives (tracing EnvFilter syntax)",
    },
];

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

impl Config {
    /// Merges the layers and validates the result. `env` looks up an environment variable
    /// (the process environment in production, a map in tests).
    pub fn load(cli: &CliOverrides, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let mut raw: Raw = BTreeMap::new();
        for s in SETTINGS {
            if let Some(d) = s.default {
                raw.insert(s.name, (d.to_string(), Source::Default));
            }
        }

        // The file: explicit path (flag or ANTEROOM_CONFIG) must exist; the implicit one may not.
        let explicit = cli
            .config_file
            .clone()
            .or_else(|| env("ANTEROOM_CONFIG").map(PathBuf::from));
        let file = explicit.clone().unwrap_or_else(|| PathBuf::from("anteroom.toml"));
        if explicit.is_some() || file.exists() {
            read_file_layer(&file, &mut raw)?;
        }

        for s in SETTINGS {
            if let Some(v) = env(s.env) {
                raw.insert(s.name, (v, Source::Env(s.env.to_string())));
            }
            if s.secret {
                let file_var = format!("{}_FILE", s.env);
                if let Some(path) = env(&file_var) {
                    let value = std::fs::read_to_string(&path).map_err(|e| ConfigError::Invalid {
                        name: s.name,
                        origin: Source::Env(file_var.clone()),
                        reason: format!("cannot read {path}: {e}"),
                    })?;
                    raw.insert(s.name, (value.trim().to_string(), Source::Env(file_var)));
                }
            }
        }

        let flags: [(&'static str, &'static str, Option<String>); 5] = [
            ("listen", "--listen", cli.listen.clone()),
            (
                "data_dir",
                "--data-dir",
                cli.data_dir.as_ref().map(|p| p.display().to_string()),
            ),
            ("database_url", "--database-url", cli.database_url.clone()),
            ("cluster", "--cluster", cli.cluster.clone()),
            ("log_format", "--log-format", cli.log_format.clone()),
        ];
        for (name, flag, value) in flags {
            if let Some(v) = value {
                raw.insert(name, (v, Source::Cli(flag)));
            }
        }

        Self::from_raw(raw)
    }

    fn from_raw(raw: Raw) -> Result<Self, ConfigError> {
        let get = |name: &'static str| raw.get(name).cloned();
        let invalid =
            |name: &'static str, origin: Source, reason: String| ConfigError::Invalid { name, origin, reason };

        let (listen_s, src) = get("listen").expect("listen has a default");
        let listen = listen_s.parse::<SocketAddr>().map_err(|_| {
            invalid(
                "listen",
                src,
                format!("`{listen_s}` is not an address:port such as 127.0.0.1:8080"),
            )
        })?;

        let (data_dir_s, src) = get("data_dir").expect("data_dir has a default");
        if data_dir_s.trim().is_empty() {
            return Err(invalid("data_dir", src, "must not be empty".into()));
        }
        let data_dir = PathBuf::from(data_dir_s);

        let database_url = match get("database_url") {
            Some((url, src)) => {
                if !(url.starts_with("sqlite:") || url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err(invalid(
                        "database_url",
                        src,
                        "must start with sqlite:, postgres:// or postgresql://".into(),
                    ));
                }
                url
            }
            None => format!("sqlite://{}?mode=rwc", data_dir.join("anteroom.db").display()),
        };

        let (cluster_s, src) = get("cluster").expect("cluster has a default");
        let cluster = match cluster_s.as_str() {
            "sim" => ClusterKind::Sim,
            "kube" => ClusterKind::Kube,
            other => return Err(invalid("cluster", src, format!("`{other}` is not one of: sim, kube"))),
        };

        let jwt_secret = match get("jwt_secret") {
            Some((s, src)) if s.len() < 32 => {
                return Err(invalid(
                    "jwt_secret",
                    src,
                    format!("must be at least 32 bytes long (got {})", s.len()),
                ));
            }
            Some((s, _)) => Some(Secret::new(s)),
            None => None,
        };

        let jwt_previous_secret = match get("jwt_previous_secret") {
            Some((s, src)) if s.len() < 32 => {
                return Err(invalid(
                    "jwt_previous_secret",
                    src,
                    format!("must be at least 32 bytes long (got {})", s.len()),
                ));
            }
            Some((s, _)) => Some(Secret::new(s)),
            None => None,
        };

        let (proxies_s, src) = get("trusted_proxies").expect("trusted_proxies has a default");
        let trusted_proxies = parse_cidrs(&proxies_s).map_err(|reason| invalid("trusted_proxies", src, reason))?;

        let admin_password = match get("admin_password") {
            Some((s, src)) if s.chars().count() < 8 => {
                return Err(invalid(
                    "admin_password",
                    src,
                    "must be at least 8 characters long".into(),
                ));
            }
            Some((s, _)) => Some(Secret::new(s)),
            None => None,
        };

        let (fmt_s, src) = get("log_format").expect("log_format has a default");
        let log_format = match fmt_s.as_str() {
            "human" => LogFormat::Human,
            "json" => LogFormat::Json,
            other => {
                return Err(invalid(
                    "log_format",
                    src,
                    format!("`{other}` is not one of: human, json"),
                ));
            }
        };

        let (log_filter, src) = get("log").expect("log has a default");
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&log_filter) {
            return Err(invalid("log", src, e.to_string()));
        }

        let sim_nodes = get("sim_nodes").map(|(p, _)| PathBuf::from(p));
        let seconds = |name: &'static str| -> Result<u64, ConfigError> {
            let (v, src) = get(name).expect("has a default");
            v.trim()
                .parse::<u64>()
                .map_err(|_| invalid(name, src, format!("`{v}` is not a whole number of seconds")))
        };
        let sim_default_runtime_seconds = seconds("sim_default_runtime_seconds")?;
        let sim_termination_grace_seconds = seconds("sim_termination_grace_seconds")?;
        let sim_finished_retention_seconds = seconds("sim_finished_retention_seconds")?;
        let (namespace, src) = get("namespace").expect("namespace has a default");
        let valid_ns = !namespace.is_empty()
            && namespace.len() <= 63
            && namespace
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !namespace.starts_with('-')
            && !namespace.ends_with('-');
        if !valid_ns {
            return Err(invalid(
                "namespace",
                src,
                format!("`{namespace}` is not a valid Kubernetes namespace name"),
            ));
        }

        let priority_class = |name: &'static str| -> Result<Option<String>, ConfigError> {
            let Some((value, src)) = get(name).filter(|(v, _)| !v.trim().is_empty()) else {
                return Ok(None);
            };
            let value = value.trim().to_owned();
            // A PriorityClass name is a DNS subdomain: refuse here rather than have every job
            // rejected by the apiserver later.
            let valid = value.len() <= 253
                && value.split('.').all(|part| {
                    !part.is_empty()
                        && part
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                        && !part.starts_with('-')
                        && !part.ends_with('-')
                });
            if valid {
                Ok(Some(value))
            } else {
                Err(invalid(
                    name,
                    src,
                    format!("`{value}` is not a valid PriorityClass name"),
                ))
            }
        };
        let kube_priority_class_normal = priority_class("kube_priority_class_normal")?;
        let kube_priority_class_backfill = priority_class("kube_priority_class_backfill")?;
        let kube_ttl_seconds_after_finished =
            match get("kube_ttl_seconds_after_finished").filter(|(v, _)| !v.trim().is_empty()) {
                None => None,
                Some((v, src)) => Some(v.trim().parse::<u32>().map_err(|_| {
                    invalid(
                        "kube_ttl_seconds_after_finished",
                        src,
                        format!("`{v}` is not a whole number of seconds"),
                    )
                })?),
            };

        Ok(Config {
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
            sim_nodes,
            sim_default_runtime_seconds,
            sim_termination_grace_seconds,
            sim_finished_retention_seconds,
            namespace,
            kube_priority_class_normal,
            kube_priority_class_backfill,
            kube_ttl_seconds_after_finished,
        })
    }
}

/// A comma-separated list of CIDRs (`10.0.0.0/8, ::1/128`); a bare address is its own /32 or
/// /128. Empty means none.
fn parse_cidrs(list: &str) -> Result<Vec<ipnet::IpNet>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            item.parse::<ipnet::IpNet>()
                .or_else(|_| item.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map(|net| net.trunc())
                .map_err(|_| format!("`{item}` is not an address or a CIDR such as 10.0.0.0/8"))
        })
        .collect()
}

fn read_file_layer(path: &Path, raw: &mut Raw) -> Result<(), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError::File {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    for (key, value) in table {
        let Some(setting) = SETTINGS.iter().find(|s| s.name == key) else {
            return Err(ConfigError::UnknownKey {
                path: path.to_path_buf(),
                known: SETTINGS.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
                key,
            });
        };
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Float(f) => f.to_string(),
            other => {
                return Err(ConfigError::Invalid {
                    name: setting.name,
                    origin: Source::File(path.to_path_buf()),
                    reason: format!("expected a string, found {}", other.type_str()),
                });
            }
        };
        raw.insert(setting.name, (text, Source::File(path.to_path_buf())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    fn no_file() -> CliOverrides {
        // Tests run in backend/, which holds no anteroom.toml; the file layer has its own tests.
        CliOverrides::default()
    }

    #[test]
    fn defaults_give_sqlite_in_the_data_dir_and_the_simulated_cluster() {
        let c = Config::load(&no_file(), &env_of(&[])).unwrap();
        assert_eq!(c.listen, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(c.cluster, ClusterKind::Sim);
        assert_eq!(c.database_url, "sqlite://data/anteroom.db?mode=rwc");
        assert!(c.jwt_secret.is_none());
    }

    #[test]
    fn environment_overrides_defaults_and_cli_overrides_environment() {
        let env = env_of(&[("ANTEROOM_LISTEN", "0.0.0.0:9000"), ("ANTEROOM_CLUSTER", "kube")]);
        let c = Config::load(&no_file(), &env).unwrap();
        assert_eq!(c.listen, "0.0.0.0:9000".parse().unwrap());
        assert_eq!(c.cluster, ClusterKind::Kube);
        let cli = CliOverrides {
            listen: Some("127.0.0.1:7000".into()),
            ..CliOverrides::default()
        };
        let c = Config::load(&cli, &env).unwrap();
        assert_eq!(c.listen, "127.0.0.1:7000".parse().unwrap());
    }

    #[test]
    fn a_bad_value_names_the_setting_and_where_it_came_from() {
        let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_LISTEN", "nonsense")])).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("`listen`"), "{msg}");
        assert!(msg.contains("ANTEROOM_LISTEN"), "{msg}");
        let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_CLUSTER", "nomad")])).unwrap_err();
        assert!(err.to_string().contains("`cluster`"));
        let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_DATABASE_URL", "mysql://x")])).unwrap_err();
        assert!(err.to_string().contains("`database_url`"));
        let err = Config::load(&no_file(), &env_of(&[("ANTEROOM_JWT_SECRET", "short")])).unwrap_err();
        assert!(err.to_string().contains("at least 32 bytes"));
    }

    #[test]
    fn kube_priority_classes_and_ttl_are_optional_and_validated() {
        let c = Config::load(&no_file(), &env_of(&[])).unwrap();
        assert_eq!(
            (
                c.kube_priority_class_normal,
                c.kube_priority_class_backfill,
                c.kube_ttl_seconds_after_finished
            ),
            (None, None, None)
        );
        let env = env_of(&[
            ("ANTEROOM_KUBE_PRIORITY_CLASS_NORMAL", ""),
            ("ANTEROOM_KUBE_PRIORITY_CLASS_BACKFILL", "anteroom-backfill"),
            ("ANTEROOM_KUBE_TTL_SECONDS_AFTER_FINISHED", "3600"),
        ]);
        let c = Config::load(&no_file(), &env).unwrap();
        assert_eq!(c.kube_priority_class_normal, None, "empty means none");
        assert_eq!(c.kube_priority_class_backfill.as_deref(), Some("anteroom-backfill"));
        assert_eq!(c.kube_ttl_seconds_after_finished, Some(3600));
        let err = Config::load(
            &no_file(),
            &env_of(&[("ANTEROOM_KUBE_PRIORITY_CLASS_NORMAL", "High_Priority")]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`kube_priority_class_normal`") && err.contains("PriorityClass"),
            "{err}"
        );
        let err = Config::load(
            &no_file(),
            &env_of(&[("ANTEROOM_KUBE_TTL_SECONDS_AFTER_FINISHED", "-1")]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("`kube_ttl_seconds_after_finished`"), "{err}");
    }

    #[test]
    fn the_file_layer_sits_between_defaults_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anteroom.toml");
        std::fs::write(&path, "listen = \"127.0.0.1:8181\"\ncluster = \"kube\"\n").unwrap();
        let cli = CliOverrides {
            config_file: Some(path.clone()),
            ..CliOverrides::default()
        };
        let c = Config::load(&cli, &env_of(&[("ANTEROOM_CLUSTER", "sim")])).unwrap();
        assert_eq!(c.listen, "127.0.0.1:8181".parse().unwrap());
        assert_eq!(c.cluster, ClusterKind::Sim);
    }

    #[test]
    fn an_unknown_key_in_the_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("anteroom.toml");
        std::fs::write(&path, "lisen = \"127.0.0.1:8181\"\n").unwrap();
        let cli = CliOverrides {
            config_file: Some(path),
            ..CliOverrides::default()
        };
        let err = Config::load(&cli, &env_of(&[])).unwrap_err();
        assert!(err.to_string().contains("`lisen`"), "{err}");
    }

    #[test]
    fn secrets_can_come_from_a_file_and_never_print() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
        let env = env_of(&[("ANTEROOM_JWT_SECRET_FILE", path.to_str().unwrap())]);
        let c = Config::load(&no_file(), &env).unwrap();
        assert_eq!(
            c.jwt_secret.as_ref().unwrap().expose(),
            "0123456789abcdef0123456789abcdef"
        );
        assert!(!format!("{c:?}").contains("0123456789"));
    }

    #[test]
    fn the_database_url_and_its_password_never_print() {
        let env = env_of(&[(
            "ANTEROOM_DATABASE_URL",
            "postgres://anteroom:hunter2-db-pass@db.internal/anteroom",
        )]);
        let c = Config::load(&no_file(), &env).unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("db.internal"), "{shown}");
        assert!(shown.contains("database_url: postgres:***"), "{shown}");
    }
}
