//! The command line, `sbatch`/`squeue`/`scancel` habits over Anteroom's API.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::output::Format;

/// ar: Anteroom from a terminal — submit jobs from a file, see what waits and why, watch,
/// read logs, cancel. Exit codes: 0 ok, 1 refused, 2 usage, 3 unreachable, 4 unauthorized.
#[derive(Debug, Parser)]
#[command(name = "ar", version, about, long_about = None)]
pub struct Cli {
    /// The server (default: the one `ar login` saved).
    #[arg(long, global = true, env = "ANTEROOM_URL", value_name = "URL")]
    pub url: Option<String>,
    /// Also trust this certificate authority (PEM) for https:// (an internal CA).
    #[arg(long, global = true, env = "ANTEROOM_CACERT", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Print the API's JSON instead of text (for scripts).
    #[arg(long, global = true)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Log in and keep the token (in the config directory, readable by you only).
    Login(LoginArgs),
    /// End every token of yours and forget the saved one.
    Logout,
    /// Who the saved token belongs to.
    Whoami,
    /// Submit a job from a YAML or JSON file (the API's job body), or from a saved template.
    Submit(SubmitArgs),
    /// Run a job again as a new job (the same body; change its name, queue, type, policy,
    /// volumes or tasks).
    Again(AgainArgs),
    /// The job templates you may use: yours and the published ones.
    Templates,
    /// A job's pods and their latest cluster events.
    Pods(PodsArgs),
    /// Your jobs (admins: `--all`), like squeue.
    #[command(visible_alias = "list")]
    Ls(ListArgs),
    /// Why a job waits: its position, the reasons and each bottleneck as a bar.
    Why(WhyArgs),
    /// Follow job events as they happen (resumes after a lost connection).
    Watch(WatchArgs),
    /// Cancel (delete) jobs.
    #[command(visible_alias = "rm")]
    Cancel(CancelArgs),
    /// A job's log.
    Logs(LogsArgs),
    /// The queues you may use, with their capacity and use.
    Queues,
    /// Your use and limits in a queue.
    Quota(QuotaArgs),
    /// What your jobs used, per day, week or month (admins: anyone's), like sreport.
    Usage(UsageArgs),
    /// Admin: quota rules, queues and the prequeue's settings.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Print the manual page (roff) on stdout: `ar man | man -l -`.
    Man,
}

/// `ar login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Your username (asked when absent).
    #[arg(short, long)]
    pub username: Option<String>,
    /// Read the password from standard input (first line) instead of a prompt.
    #[arg(long)]
    pub password_stdin: bool,
}

/// `ar submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The job file (`-` for standard input).
    #[arg(
        short,
        long,
        value_name = "FILE",
        required_unless_present = "template",
        conflicts_with = "template"
    )]
    pub file: Option<PathBuf>,
    /// A saved template instead of a file (its name, as `ar templates` lists it; yours first,
    /// then the published ones). The job is named after it unless `--set name=…`.
    #[arg(short, long, value_name = "NAME")]
    pub template: Option<String>,
    /// Change the file before sending: `name=sweep-3`, `tasks.0.resources.cpu=4`,
    /// `tasks.0.command=[python, train.py, --lr, 0.1]`. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Ask what would happen (admitted, held and why), submit nothing.
    #[arg(long)]
    pub preview: bool,
    /// The `Idempotency-Key` (default: from the body and the current 10-minute window, so the
    /// same command run again soon answers the first job).
    #[arg(long, value_name = "KEY", conflicts_with = "again")]
    pub idempotency_key: Option<String>,
    /// Submit even if the same body was submitted in the last minutes.
    #[arg(long)]
    pub again: bool,
    /// Print only the job's id (for scripts).
    #[arg(short, long)]
    pub quiet: bool,
}

/// `ar again`.
#[derive(Debug, Args)]
pub struct AgainArgs {
    /// The job to run again.
    pub id: i64,
    /// Another name (default: the old one with the next run suffix, `-r2`, `-r3`…).
    #[arg(long)]
    pub name: Option<String>,
    /// Another queue.
    #[arg(long)]
    pub queue: Option<String>,
    /// Another schedule type (`normal` or `backfill`).
    #[arg(long = "type", value_name = "TYPE")]
    pub schedule_type: Option<String>,
    /// Another preemption policy (normal jobs: `PreemptLowerPriority` or `Never`).
    #[arg(long, value_name = "POLICY")]
    pub policy: Option<String>,
    /// Other catalogue volumes (repeatable; `--volume ''` for none).
    #[arg(long = "volume", value_name = "NAME")]
    pub volumes: Vec<String>,
    /// Change its tasks: `tasks.0.resources.cpu=4`, `tasks.0.image=pytorch:2.4`. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// The `Idempotency-Key` (default: from the job, the changes and the current 10-minute
    /// window, so the same command run again soon answers the first new job).
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Print only the new job's id (for scripts).
    #[arg(short, long)]
    pub quiet: bool,
}

/// `ar pods`.
#[derive(Debug, Args)]
pub struct PodsArgs {
    /// The job's id.
    pub id: i64,
}

/// `ar ls`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only these phases (`Prequeue`, `Running`, …). Repeatable or comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub phase: Vec<String>,
    /// Only these queues.
    #[arg(short, long, value_delimiter = ',')]
    pub queue: Vec<String>,
    /// Only these kinds (`custom`, `jupyter`, …).
    #[arg(long, value_delimiter = ',')]
    pub kind: Vec<String>,
    /// Only `normal` or `backfill` jobs.
    #[arg(long = "type", value_delimiter = ',', value_name = "TYPE")]
    pub schedule_type: Vec<String>,
    /// Every user's jobs (admins).
    #[arg(short, long)]
    pub all: bool,
    /// Only this user's jobs (admins; implies --all).
    #[arg(long)]
    pub user: Vec<String>,
    /// Unfinished jobs only (waiting, pending, running).
    #[arg(long)]
    pub active: bool,
    /// The page (50 jobs a page by default, newest first).
    #[arg(long, default_value_t = 1)]
    pub page: u64,
    /// Jobs per page (at most 500).
    #[arg(long, default_value_t = 50)]
    pub page_size: u64,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

/// `ar why`.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// The job's id.
    pub id: i64,
}

/// `ar watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Only this job's events.
    #[arg(long)]
    pub job: Option<i64>,
    /// Resume after this event id (what a previous watch printed last).
    #[arg(long, value_name = "EVENT_ID")]
    pub since: Option<String>,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
}

/// `ar cancel`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The jobs' ids.
    #[arg(required = true)]
    pub ids: Vec<i64>,
}

/// `ar logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The job's id.
    pub id: i64,
    /// Keep printing what the pod writes until it ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Which task (default: the first).
    #[arg(long)]
    pub task: Option<String>,
    /// Which replica of the task, from 0.
    #[arg(long, default_value_t = 0)]
    pub replica: u32,
    /// Only the last N lines.
    #[arg(long, value_name = "N")]
    pub tail: Option<u32>,
}

/// `ar quota`.
#[derive(Debug, Args)]
pub struct QuotaArgs {
    /// The queue (default: `default`).
    #[arg(short, long, default_value = "default")]
    pub queue: String,
}

/// `ar usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// From this day (`2026-11-01`, UTC) or instant (RFC 3339); default: 30 days before `--to`.
    #[arg(long, value_name = "DATE")]
    pub from: Option<String>,
    /// Until this day (exclusive) or instant; default: now.
    #[arg(long, value_name = "DATE")]
    pub to: Option<String>,
    /// `day`, `week` (ISO) or `month`.
    #[arg(long, default_value = "day", value_parser = ["day", "week", "month"])]
    pub by: String,
    /// Only this user's jobs (admins; default for users: their own, for admins: everyone's).
    #[arg(short, long)]
    pub user: Option<String>,
    /// Only this queue's jobs.
    #[arg(short, long)]
    pub queue: Option<String>,
    /// Print CSV (a line per period, queue, user and resource), for a spreadsheet.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Your fair share over time instead: per queue, your decayed usage, share and factor
    /// (1: used nothing, 0.5: exactly your share) and what drives it.
    #[arg(long, conflicts_with_all = ["csv", "from", "to", "user", "queue"])]
    pub fair_share: bool,
}

/// `ar completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `ar admin …`.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Quota rules: a per-user limit inside a queue.
    #[command(subcommand)]
    Quota(AdminQuota),
    /// Queues.
    #[command(subcommand)]
    Queue(AdminQueue),
    /// The prequeue's settings.
    #[command(subcommand)]
    Settings(AdminSettings),
}

/// `ar admin quota …`.
#[derive(Debug, Subcommand)]
pub enum AdminQuota {
    /// Every quota rule.
    Ls,
    /// Create or replace the rule of a queue: `ar admin quota set gpu cpu=32 memory=128Gi
    /// nvidia.com/a100=4 --max-active 3`.
    Set {
        /// The queue.
        queue: String,
        /// Limits as resource=quantity.
        #[arg(value_name = "RESOURCE=QUANTITY")]
        limits: Vec<String>,
        /// At most this many active jobs per user in the queue.
        #[arg(long)]
        max_active: Option<u32>,
    },
    /// Delete the rule of a queue.
    Rm {
        /// The queue.
        queue: String,
    },
}

/// `ar admin queue …`.
#[derive(Debug, Subcommand)]
pub enum AdminQueue {
    /// Every queue with its members.
    Ls,
    /// Create or replace a queue from a YAML or JSON file (the API's queue body).
    Apply {
        /// The file (`-` for standard input).
        #[arg(short, long, value_name = "FILE")]
        file: PathBuf,
    },
    /// Delete a queue.
    Rm {
        /// The queue.
        name: String,
    },
}

/// `ar admin settings …`.
#[derive(Debug, Subcommand)]
pub enum AdminSettings {
    /// The prequeue's settings.
    Show,
    /// Change some settings: `ar admin settings set backfillEnabled=false maxJobsPerRound=20`.
    Set {
        /// Fields as name=value (the API's names).
        #[arg(value_name = "FIELD=VALUE", required = true)]
        fields: Vec<String>,
    },
}
