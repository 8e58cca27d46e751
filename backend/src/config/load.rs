//! Loading: the layers merged in order (defaults, the file, the environment, the flags) and
//! the one parse step from raw strings to [`Config`], naming the setting and its layer on error.

use super::*;

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

        // A century at most: beyond it a retention means "for ever", and 0 says that.
        const MAX_RETENTION_DAYS: u32 = 36_500;
        let (days, src) = get("job_retention_days").expect("job_retention_days has a default");
        let job_retention_days = days
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|d| *d <= MAX_RETENTION_DAYS)
            .ok_or_else(|| {
                invalid(
                    "job_retention_days",
                    src,
                    format!("`{days}` is not a whole number of days from 0 (for ever) to {MAX_RETENTION_DAYS}"),
                )
            })?;

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
        let sim_notebook_upstream = match get("sim_notebook_upstream") {
            Some((url, src)) => Some(
                crate::notebooks::upstream_base(&url)
                    .map_err(|why| invalid("sim_notebook_upstream", src, format!("`{url}` {why}")))?,
            ),
            None => None,
        };
        // `namespace` is the deprecated name of `jobs_namespace`: still read while
        // `jobs_namespace` is left at its default, so a deployment that set it keeps its jobs
        // where they are until it renames the setting.
        let mut warnings = Vec::new();
        let (ns_setting, (namespace, src)) = match (
            get("jobs_namespace").expect("jobs_namespace has a default"),
            get("namespace"),
        ) {
            ((_, Source::Default), Some(old)) => {
                warnings.push(format!(
                    "the setting `namespace` (from {}) is deprecated: rename it to `jobs_namespace` (ANTEROOM_JOBS_NAMESPACE)",
                    old.1
                ));
                ("namespace", old)
            }
            (new, old) => {
                if let Some((_, old_src)) = old {
                    warnings.push(format!(
                        "the setting `namespace` (from {old_src}) is deprecated and ignored: `jobs_namespace` (from {}) is set",
                        new.1
                    ));
                }
                ("jobs_namespace", new)
            }
        };
        let valid_ns = !namespace.is_empty()
            && namespace.len() <= 63
            && namespace
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !namespace.starts_with('-')
            && !namespace.ends_with('-');
        if !valid_ns {
            return Err(invalid(
                ns_setting,
                src,
                format!("`{namespace}` is not a valid Kubernetes namespace name"),
            ));
        }
        let jobs_namespace = namespace;

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
        let kube_priority_class_never = priority_class("kube_priority_class_never")?;
        let image_pull_policy = match get("image_pull_policy").filter(|(v, _)| !v.trim().is_empty()) {
            None => None,
            Some((v, src)) => Some(match v.trim() {
                "Always" => ImagePullPolicy::Always,
                "IfNotPresent" => ImagePullPolicy::IfNotPresent,
                "Never" => ImagePullPolicy::Never,
                other => {
                    return Err(invalid(
                        "image_pull_policy",
                        src,
                        format!("`{other}` is not one of: Always, IfNotPresent, Never"),
                    ));
                }
            }),
        };
        let (images_s, src) = get("allowed_images").expect("allowed_images has a default");
        let allowed_images =
            parse_image_prefixes(&images_s).map_err(|reason| invalid("allowed_images", src, reason))?;
        // Compared as text: `registry.example.org` would admit `registry.example.org.evil.com/x`.
        for prefix in allowed_images.iter().filter(|p| !p.contains('/')) {
            warnings.push(format!(
                "allowed_images: `{prefix}` has no `/`, so it admits every registry host that merely starts with it; write `{prefix}/`"
            ));
        }
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
        let boolean = |name: &'static str| {
            let (v, src) = get(name).expect("has a default");
            match v.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(invalid(name, src, format!("`{v}` is not one of: true, false"))),
            }
        };
        let mirror_queues = boolean("mirror_queues")?;
        let metrics_user_labels = boolean("metrics_user_labels")?;

        let public_url = match get("public_url").filter(|(v, _)| !v.trim().is_empty()) {
            None => None,
            Some((v, src)) => Some(PublicUrl::parse(&v).map_err(|reason| invalid("public_url", src, reason))?),
        };
        let positive = |name: &'static str| -> Result<u64, ConfigError> {
            let (v, src) = get(name).expect("has a default");
            v.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| invalid(name, src, format!("`{v}` is not a whole number above zero")))
        };
        let http_limits = HttpLimits {
            header_read_timeout: std::time::Duration::from_secs(positive("header_read_timeout_seconds")?),
            request_timeout: std::time::Duration::from_secs(positive("request_timeout_seconds")?),
            max_connections: match positive("max_connections")? {
                n if n <= 1_000_000 => usize::try_from(n).unwrap_or(usize::MAX),
                n => {
                    let (_, src) = get("max_connections").expect("has a default");
                    return Err(invalid("max_connections", src, format!("`{n}` is over 1000000")));
                }
            },
            max_streams_per_user: usize::try_from(positive("max_streams_per_user")?).unwrap_or(usize::MAX),
        };
        let notebook_origin = match get("notebook_origin").filter(|(v, _)| !v.trim().is_empty()) {
            None => None,
            Some((v, src)) => Some(
                crate::notebooks::origin::NotebookOrigin::parse(&v)
                    .map_err(|reason| invalid("notebook_origin", src, reason))?,
            ),
        };
        if let (Some(notebooks), Some(public)) = (&notebook_origin, &public_url)
            && public.https
            && !notebooks.https()
        {
            // A notebook cookie sent in the clear, and a notebook page that can plant cookies for
            // the site over http: notebooks follow the portal onto TLS.
            let (v, src) = get("notebook_origin").expect("set");
            return Err(invalid(
                "notebook_origin",
                src,
                format!("`{v}` is http while public_url is https: serve notebooks over https too"),
            ));
        }
        match (&notebook_origin, &public_url) {
            (None, Some(public)) if !is_loopback_origin(&public.origin) => warnings.push(format!(
                "notebook_origin is unset: notebooks open at http://j<id>.localhost:<port>, which reaches this server only from its own machine or through an SSH tunnel, not from browsers that use {}; set notebook_origin (README: Notebooks on an origin of their own)",
                public.origin
            )),
            (Some(notebooks), Some(public)) if !public.https && !notebooks.origin(1).contains(".localhost") => {
                warnings.push(
                    "public_url and notebook_origin are http: without TLS the session cookie cannot be __Host-, and a notebook page could plant cookies for the site's other hosts; use https for both".to_owned(),
                )
            }
            _ => {}
        }
        if let (Some(notebooks), Some(public)) = (&notebook_origin, &public_url) {
            // The portal on a notebook host would be served as a notebook origin: never.
            let host = public.origin.split_once("://").map_or("", |(_, h)| h);
            if notebooks.job_of_host(host).is_some() {
                let (v, src) = get("notebook_origin").expect("set");
                return Err(invalid(
                    "notebook_origin",
                    src,
                    format!("`{v}` matches public_url's host: notebooks need hosts apart from the portal's"),
                ));
            }
        }
        let (networks, src) = get("cluster_networks").expect("cluster_networks has a default");
        let cluster_networks = parse_cidrs(&networks).map_err(|reason| invalid("cluster_networks", src, reason))?;
        let notebook_limits = crate::config::NotebookLimits {
            max_tunnels_per_user: usize::try_from(positive("max_notebook_tunnels_per_user")?).unwrap_or(usize::MAX),
            max_requests_per_user: usize::try_from(positive("max_notebook_requests_per_user")?).unwrap_or(usize::MAX),
            idle_timeout: std::time::Duration::from_secs(positive("notebook_idle_timeout_seconds")?),
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
        })
    }
}

/// Whether an origin (`scheme://host[:port]`) names this machine: a loopback address or
/// `localhost`, where the laptop default for notebooks works.
fn is_loopback_origin(origin: &str) -> bool {
    let authority = origin.split_once("://").map_or(origin, |(_, a)| a);
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
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

/// A comma-separated list of image reference prefixes (`registry.example.org/, docker.io/pytorch/`).
/// Empty means any image. A prefix is compared as text, so `registry.example.org` without the
/// slash would also admit `registry.example.org.evil.com/x`: the README says to end it with `/`.
fn parse_image_prefixes(list: &str) -> Result<Vec<String>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            if item.chars().any(|c| c.is_whitespace() || c.is_control()) || item.len() > 512 {
                Err(format!(
                    "`{item}` is not an image prefix such as registry.example.org/ (no spaces, at most 512 characters)"
                ))
            } else {
                Ok(item.to_owned())
            }
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
