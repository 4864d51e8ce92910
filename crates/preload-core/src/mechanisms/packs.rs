//! Context packs: the files a user names in `.claude/context-packs.json` (and, for every
//! project, `~/.claude/engine/context-packs.json`), when each pack goes out, and the growing
//! logs sent as their tail.
//!
//! A pack is delivered as one unit under a key of its own, `<config file>#<name>`, through the
//! same pipeline as every file: recorded in `preloadedFiles`, within the output budget, in
//! labelled parts when it is larger. This module knows what a pack holds and when it is due
//! (its `config` and `render` modules); the hooks decide when to ask.

mod config;
mod render;

use std::path::{Path, PathBuf};

use crate::primitives::memo::Memo;
use crate::state::stamps::Meta;

pub use config::{
    ConfigFile, DEFAULT_INDEX_MARKERS, DEFAULT_LOG_GLOB, DEFAULT_TAIL_LINES, LogRule, Pack,
    PackFile, PacksError, Strategy, Trigger, parse,
};
pub use render::{Reduction, Rendered, render};

/// The project's configuration, relative to the project root.
pub const PROJECT_FILE: &str = ".claude/context-packs.json";
/// The configuration for every project, relative to `~/.claude`.
pub const GLOBAL_FILE: &str = "engine/context-packs.json";
/// The largest configuration file read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// The name every pack key's file part ends with.
const KEY_FILE_NAME: &str = "context-packs.json";

/// A pack with where it was configured.
#[derive(Debug, Clone)]
pub struct LoadedPack {
    /// The pack.
    pub pack: Pack,
    /// The configuration file it comes from.
    pub file: PathBuf,
    /// That file's metadata when it was read (for the pack's stamp).
    pub file_meta: Option<Meta>,
    /// The key its delivery is recorded under: `<config file>#<name>`.
    pub key: String,
}

/// A moment at which packs may be due.
#[derive(Debug, Clone, Copy)]
pub enum Moment<'a> {
    /// A new context window.
    SessionStart,
    /// A skill starts.
    Skill(&'a str),
    /// The session enters a phase.
    Phase {
        /// Its label (`3.A`).
        label: &'a str,
        /// Its name (`Build Loop`).
        name: &'a str,
    },
    /// A tool touches a path (absolute).
    Path(&'a Path),
    /// A sub-agent of this type starts (it gets the `SessionStart` packs too).
    SubAgent(&'a str),
}

/// The configuration of one project: both files merged, and what was wrong with them.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The packs: the global file's, a project pack replacing one of the same name in place,
    /// then the project's others.
    pub packs: Vec<LoadedPack>,
    /// `[start, end]` of an index.
    pub markers: [String; 2],
    /// Growing logs.
    pub logs: Vec<LogRule>,
    /// Files that could not be used (they contribute nothing).
    pub errors: Vec<PacksError>,
    /// The project root.
    pub project_root: PathBuf,
    /// `HOME`.
    pub home: PathBuf,
    /// The packs rendered in this call, by key and byte limit: a call that decides twice
    /// (without the lock, then under it) reads a pack's files once.
    rendered: Memo<(String, u64), Rendered>,
}

/// The configuration file at `path`: `None` when there is none.
pub fn read_file(path: &Path) -> Option<Result<ConfigFile, PacksError>> {
    read_file_meta(path).map(|(config, _)| config)
}

/// [`read_file`], with the metadata of the file as it was opened for the read.
fn read_file_meta(path: &Path) -> Option<(Result<ConfigFile, PacksError>, Option<Meta>)> {
    let (meta, bytes) = crate::primitives::file::read_regular_with(path, MAX_CONFIG_BYTES);
    let meta = meta.as_ref().map(Meta::from);
    let config = match bytes {
        Ok(bytes) => parse(path, &crate::primitives::file::lossy_text(bytes)),
        Err(crate::primitives::file::ReadError::Unavailable { .. }) if !path.exists() => {
            return None;
        }
        Err(e) => Err(PacksError::Unreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }),
    };
    Some((config, meta))
}

/// The configuration files of a project, global first.
pub fn config_files(project_root: &Path, claude_dir: &Path) -> [PathBuf; 2] {
    [
        claude_dir.join(GLOBAL_FILE),
        project_root.join(PROJECT_FILE),
    ]
}

/// Load the configuration of the project at `project_root` (`claude_dir` is `~/.claude`).
/// Never fails: a broken file is left out and named in `errors`.
pub fn load(project_root: &Path, claude_dir: &Path, home: &Path) -> Loaded {
    let mut loaded = Loaded {
        packs: Vec::new(),
        markers: DEFAULT_INDEX_MARKERS.map(str::to_owned),
        logs: LogRule::defaults(),
        errors: Vec::new(),
        project_root: project_root.to_path_buf(),
        home: home.to_path_buf(),
        rendered: Memo::default(),
    };
    for file in config_files(project_root, claude_dir) {
        let (config, file_meta) = match read_file_meta(&file) {
            None => continue,
            Some((Err(e), _)) => {
                loaded.errors.push(e);
                continue;
            }
            Some((Ok(config), meta)) => (config, meta),
        };
        let base = crate::primitives::paths::normalize(&file.to_string_lossy(), home);
        for pack in config.packs {
            let key = format!("{base}#{}", pack.name);
            let entry = LoadedPack {
                pack,
                file: file.clone(),
                file_meta,
                key,
            };
            match loaded
                .packs
                .iter_mut()
                .find(|p| p.pack.name == entry.pack.name)
            {
                Some(slot) => *slot = entry,
                None => loaded.packs.push(entry),
            }
        }
        if let Some([start, end]) = config.index_markers {
            loaded.markers = [start.0, end.0];
        }
        if let Some(logs) = config.logs {
            loaded.logs = logs;
        }
    }
    loaded
}

/// A pack file's path as configured: relative to the project, `~/` for `home`, or absolute.
pub fn resolve_path(project_root: &Path, home: &Path, path: &str) -> PathBuf {
    if path.starts_with('/') || path.starts_with('~') {
        crate::primitives::paths::expand_tilde(path, home)
    } else {
        project_root.join(path)
    }
}

/// True when `path` is a pack key (`…/context-packs.json#<name>`).
///
/// Found by its last `#` (a vector search from the end): a start asks this of every path of
/// the context window, thousands on a large state, and a file path rarely holds a `#` at all.
pub fn is_key(path: &str) -> bool {
    let Some(hash) = crate::primitives::bytes::rfind(b'#', path.as_bytes()) else {
        return false;
    };
    path[..hash]
        .strip_suffix(KEY_FILE_NAME)
        .is_some_and(|dir| dir.ends_with('/'))
        && crate::primitives::paths::is_safe_name(&path[hash + 1..])
}

/// The pack name of a key.
pub fn name_of_key(key: &str) -> Option<&str> {
    key.rsplit_once('#')
        .map(|(_, name)| name)
        .filter(|_| is_key(key))
}

impl Loaded {
    /// `pack` rendered ([`render`]) with each file read at most `max_bytes`, once per call.
    pub fn rendered(&self, pack: &LoadedPack, max_bytes: u64) -> Rendered {
        self.rendered
            .get_or_keep(&(pack.key.clone(), max_bytes), || {
                render(self, pack, max_bytes)
            })
    }

    /// The pack recorded under `key`.
    pub fn by_key(&self, key: &str) -> Option<&LoadedPack> {
        self.packs.iter().find(|p| p.key == key)
    }

    /// The packs due at `moment`, in configuration order.
    pub fn due(&self, moment: Moment<'_>) -> Vec<&LoadedPack> {
        self.packs
            .iter()
            .filter(|p| self.is_due(&p.pack.on, moment))
            .collect()
    }

    fn is_due(&self, on: &Trigger, moment: Moment<'_>) -> bool {
        match (on, moment) {
            (Trigger::SessionStart, Moment::SessionStart | Moment::SubAgent(_)) => true,
            (Trigger::Skill(want), Moment::Skill(name)) => want == name,
            (Trigger::Phase(want), Moment::Phase { label, name }) => {
                want == label || want.eq_ignore_ascii_case(name)
            }
            (Trigger::Path(glob), Moment::Path(path)) => {
                let rel = path.strip_prefix(&self.project_root).unwrap_or(path);
                glob.is_match(rel)
            }
            (Trigger::Agent(want), Moment::SubAgent(kind)) => want == "*" || want == kind,
            _ => false,
        }
    }

    /// A file's path as the configuration names it: relative to the project, `~/` for the
    /// home directory, or absolute.
    pub fn resolve(&self, path: &str) -> PathBuf {
        resolve_path(&self.project_root, &self.home, path)
    }

    /// The tail length when `path` (absolute) is a growing log.
    pub fn tail_lines(&self, path: &Path) -> Option<usize> {
        let rel = path.strip_prefix(&self.project_root).unwrap_or(path);
        self.logs
            .iter()
            .find(|rule| rule.glob.is_match(rel) || rule.glob.is_match(path))
            .map(|rule| rule.tail_lines.max(1))
    }
}

#[cfg(test)]
mod tests;
