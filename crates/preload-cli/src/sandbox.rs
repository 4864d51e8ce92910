//! A throwaway copy of a project's preload state, where hooks run without touching real files.
//!
//! [`Sandbox::of_project`] builds, in a fresh temporary directory: the project's skeleton (its
//! directories, copies of its markdown, directives and context packs file, so discovery walks
//! the same tree, and links to its other files), a copy of its
//! sessions directories (state files, seeds, counters, artifacts), of the marker and cache
//! directory (compaction markers, the SessionStart text cache) and of the owner's session
//! cache, every real project path in them rewritten to the copy's. [`Sandbox::env`] is the
//! environment a hook runs with there: the caller's, with every place a hook writes pointed
//! into the sandbox and tmux left out (no paste reaches the user's terminal). The engine under `~/.claude` is read where it is (the hooks never write
//! it). The directory is removed when the sandbox is dropped.

pub mod mirror;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use preload_core::mechanisms::context::Context;
use preload_core::mechanisms::session;
use preload_core::primitives::env::{self, Env};
use preload_core::primitives::file::OpError;
use preload_core::primitives::markers;

use mirror::{Copier, LIMITS, replace_path};

/// Why a sandbox could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A file operation failed.
    #[error(transparent)]
    Io(#[from] OpError),
    /// The project would be the home directory itself (with the engine in it).
    #[error(
        "the project root {root} holds ~/.claude itself; run this inside a project (a directory with its own .claude/)"
    )]
    HomeIsProject {
        /// The project root.
        root: PathBuf,
    },
}

/// A sandbox; removed when dropped.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
    /// The copy of the project (or an empty project).
    pub project: PathBuf,
    /// The real project it stands for.
    pub real_project: PathBuf,
    /// The delivery log the hooks write there.
    pub log: PathBuf,
    /// `TMPDIR` of the hooks (markers and the SessionStart cache under it).
    pub tmp: PathBuf,
    /// `CLAUDE_SESSION_CACHE_DIR` of the hooks.
    pub session_cache: PathBuf,
    /// What was left out of the copy, for the user.
    pub notes: Vec<String>,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

impl Sandbox {
    /// An empty sandbox: a project with `.claude/` and `sessions/`, standing for `real_project`.
    pub fn empty(label: &str, real_project: &Path) -> Result<Self, SandboxError> {
        let base = std::env::temp_dir();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut root = base.join(format!("preload-{label}-{}-{nanos}", std::process::id()));
        let mut n = 0;
        while let Err(err) = fs::create_dir(&root) {
            n += 1;
            if n > 100 || err.kind() != io::ErrorKind::AlreadyExists {
                return Err(OpError::at("create", &root)(err).into());
            }
            root = base.join(format!(
                "preload-{label}-{}-{nanos}-{n}",
                std::process::id()
            ));
        }
        let root = fs::canonicalize(&root).map_err(OpError::at("resolve", &root))?;
        let sandbox = Self {
            project: root.join("project"),
            real_project: real_project.to_path_buf(),
            log: root.join("delivery-log.jsonl"),
            tmp: root.join("tmp"),
            session_cache: root.join("session-cache"),
            notes: Vec::new(),
            root,
        };
        for dir in [
            sandbox.project.join(".claude"),
            sandbox.project.join("sessions"),
            sandbox.tmp.clone(),
            sandbox.session_cache.clone(),
        ] {
            fs::create_dir_all(&dir).map_err(OpError::at("create", &dir))?;
        }
        Ok(sandbox)
    }

    /// A sandbox holding a copy of the preload state of `ctx`'s project (see the module).
    pub fn of_project(label: &str, ctx: &Context) -> Result<Self, SandboxError> {
        let real = ctx.project_root.clone();
        if ctx.paths.claude.starts_with(&real) {
            return Err(SandboxError::HomeIsProject { root: real });
        }
        let mut sandbox = Self::empty(label, &real)?;
        let (from, to) = (
            real.to_string_lossy().into_owned(),
            sandbox.project.to_string_lossy().into_owned(),
        );
        let rewrite = move |text: &str| replace_path(text, &from, &to);
        let mut copier = Copier {
            rewrite: &rewrite,
            limits: LIMITS,
            bytes: 0,
            dirs: 0,
            notes: Vec::new(),
        };
        let sessions = ctx.sessions_dirs();
        copier.skeleton(&real, &sandbox.project, &sessions)?;
        for dir in sessions.iter().filter(|d| d.is_dir()) {
            let inside = dir.strip_prefix(&real).unwrap_or(dir);
            copier.tree(dir, &sandbox.project.join(inside))?;
        }
        let private = sandbox.marker_dir();
        copier.private_files(&markers::default_dir(&ctx.env), &private)?;
        if let Some(cache) = ctx.env.get(env::PRELOAD_CACHE_DIR) {
            copier.private_files(Path::new(cache), &private)?;
        }
        let cache = session::cache_file(ctx);
        if cache.is_file() {
            let name = cache.file_name().unwrap_or_default();
            copier.file(&cache, &sandbox.session_cache.join(name))?;
        }
        sandbox.notes = copier.notes;
        Ok(sandbox)
    }

    /// The sandbox's own directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the hooks keep markers and the SessionStart cache in the sandbox.
    pub fn marker_dir(&self) -> PathBuf {
        markers::user_dir(&Env::from_pairs([(
            env::TMPDIR,
            self.tmp.to_string_lossy(),
        )]))
    }

    /// `text` with the real project's paths turned into the copy's.
    pub fn to_sandbox(&self, text: &str) -> String {
        replace_path(
            text,
            &self.real_project.to_string_lossy(),
            &self.project.to_string_lossy(),
        )
    }

    /// `text` with the copy's paths turned back into the real project's.
    pub fn to_real(&self, text: &str) -> String {
        replace_path(
            text,
            &self.project.to_string_lossy(),
            &self.real_project.to_string_lossy(),
        )
    }

    /// The environment of a hook in the sandbox: the variables of `base` a hook reads, with
    /// every place it writes (temporary directory, markers, caches, the delivery log) in the
    /// sandbox, the project's paths in the copy, and `owner` as the owning Claude process.
    pub fn env(&self, base: &Env, owner: u32) -> Vec<(String, String)> {
        let dropped = [
            env::PRELOAD_MARKER_DIR,
            env::PRELOAD_CACHE_DIR,
            env::CLAUDE_PID,
            env::HOOK_DEBUG,
            // A paste rule would type into the user's terminal.
            env::TMUX,
            env::TMUX_PANE,
        ];
        let mut out: Vec<(String, String)> = env::ALL
            .iter()
            .filter(|name| !dropped.contains(name))
            .filter_map(|name| base.get(name).map(|v| ((*name).to_owned(), v.to_owned())))
            .collect();
        let mut set = |name: &str, value: String| {
            out.retain(|(k, _)| k != name);
            out.push((name.to_owned(), value));
        };
        set(env::TMPDIR, self.tmp.to_string_lossy().into_owned());
        set(
            env::CLAUDE_SESSION_CACHE_DIR,
            self.session_cache.to_string_lossy().into_owned(),
        );
        set(
            env::PRELOAD_TEST_LOG,
            self.log.to_string_lossy().into_owned(),
        );
        set(env::CLAUDE_SUPERVISOR_PID, owner.to_string());
        for name in [env::CLAUDE_PROJECT_DIR, env::PRELOAD_HANDLER_DIR] {
            if let Some(value) = base.get(name) {
                set(name, self.to_sandbox(value));
            }
        }
        set(
            "PATH",
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        );
        out
    }

    /// The events the hooks logged in the sandbox so far, paths turned back into the real
    /// project's.
    pub fn events(&self) -> Vec<serde_json::Value> {
        fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(&self.to_real(l)).ok())
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn a_project_copy_points_every_write_into_the_sandbox() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let real = tmp.path().join("proj");
        fs::create_dir_all(home.join(".claude")).unwrap();
        fs::create_dir_all(real.join(".claude")).unwrap();
        fs::create_dir_all(real.join("sessions/s")).unwrap();
        let state = format!("{{\"touchedDirs\": {{\"{}/src\": []}}}}", real.display());
        fs::write(real.join("sessions/s/.state.json"), &state).unwrap();
        let vars = Env::from_pairs([
            (env::HOME, home.to_string_lossy().into_owned()),
            (
                env::TMPDIR,
                tmp.path().join("t").to_string_lossy().into_owned(),
            ),
            (env::HOOK_DEBUG, "1".to_owned()),
        ]);
        let input = preload_core::HookInput::from_value(json!({"cwd": real}));
        let ctx = Context::new(vars.clone(), "preload", &input, Duration::from_secs(1));
        let sandbox = Sandbox::of_project("test", &ctx).unwrap();
        let copied = fs::read_to_string(sandbox.project.join("sessions/s/.state.json")).unwrap();
        assert_eq!(copied, sandbox.to_sandbox(&state));
        assert!(copied.contains(&sandbox.project.to_string_lossy().into_owned()));
        assert_eq!(sandbox.to_real(&copied), state);
        let env = sandbox.env(&vars, 42);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(
            get(env::TMPDIR),
            Some(sandbox.tmp.to_string_lossy().into_owned())
        );
        assert_eq!(get(env::CLAUDE_SUPERVISOR_PID).as_deref(), Some("42"));
        assert_eq!(get(env::HOOK_DEBUG), None);
        assert!(
            get(env::PRELOAD_TEST_LOG)
                .unwrap()
                .starts_with(&*sandbox.root().to_string_lossy())
        );
        let root = sandbox.root().to_path_buf();
        drop(sandbox);
        assert!(!root.exists(), "removed when dropped");
        assert_eq!(
            fs::read_to_string(real.join("sessions/s/.state.json")).unwrap(),
            state
        );
    }

    #[test]
    fn the_home_directory_is_no_project() {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir_all(tmp.path().join(".claude")).unwrap();
        let vars = Env::from_pairs([(env::HOME, tmp.path().to_string_lossy().into_owned())]);
        let input = preload_core::HookInput::from_value(json!({"cwd": tmp.path()}));
        let ctx = Context::new(vars, "preload", &input, Duration::from_secs(1));
        assert!(matches!(
            Sandbox::of_project("test", &ctx),
            Err(SandboxError::HomeIsProject { .. })
        ));
    }
}
