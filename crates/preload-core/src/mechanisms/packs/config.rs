//! The context-packs configuration file: its JSON shape, read with errors that name the file,
//! line and column, and the triggers (`on`) a pack is delivered at.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

/// The index markers when the configuration names none.
pub const DEFAULT_INDEX_MARKERS: [&str; 2] = ["<!-- INDEX:START -->", "<!-- INDEX:END -->"];
/// The files delivered as their tail when the configuration names no `logs`.
pub const DEFAULT_LOG_GLOB: &str = "**/DIALOGUE.md";
/// Lines of a log delivered when its rule names no `tailLines`.
pub const DEFAULT_TAIL_LINES: usize = 100;

/// Why a configuration file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacksError {
    /// Not valid JSON, or not the shape of a packs file.
    #[error("{path}: line {line} column {column}: {message}")]
    Invalid {
        /// The configuration file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// There, but not readable as a regular file within the size limit.
    #[error("{path}: cannot read it ({reason})")]
    Unreadable {
        /// The configuration file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// How one file of a pack is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The whole file.
    Verbatim,
    /// The text between the index markers (the whole file, said so, without them).
    Index,
    /// One line naming the path and the note.
    Mention,
    /// Nothing.
    Skip,
}

impl Strategy {
    /// The next cheaper form under a budget (`None` for a mention or a skip).
    pub fn degraded(self) -> Option<Self> {
        match self {
            Self::Verbatim => Some(Self::Index),
            Self::Index => Some(Self::Mention),
            Self::Mention | Self::Skip => None,
        }
    }

    /// The configuration's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verbatim => "verbatim",
            Self::Index => "index",
            Self::Mention => "mention",
            Self::Skip => "skip",
        }
    }
}

fn default_strategy() -> Strategy {
    Strategy::Verbatim
}

/// When a pack is delivered: its `on`.
#[derive(Debug, Clone)]
pub enum Trigger {
    /// `SessionStart`: every new context window (and every sub-agent's).
    SessionStart,
    /// `skill:NAME`: when the skill starts (`/NAME`, a `Skill` call, its activation).
    Skill(String),
    /// `phase:LABEL`: when the session enters the phase with this label (or name).
    Phase(String),
    /// `path:GLOB`: when a tool touches a path the glob matches (relative to the project).
    Path(Box<PathGlob>),
    /// `agent:TYPE`: when a sub-agent of this type starts (`*` for every type).
    Agent(String),
}

impl<'de> Deserialize<'de> for Trigger {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_trigger(&text).map_err(de::Error::custom)
    }
}

fn parse_trigger(text: &str) -> Result<Trigger, String> {
    if text == "SessionStart" {
        return Ok(Trigger::SessionStart);
    }
    let expected = "expected \"SessionStart\", \"skill:NAME\", \"phase:LABEL\", \
                    \"path:GLOB\" or \"agent:TYPE\"";
    let Some((kind, value)) = text.split_once(':') else {
        return Err(format!("unknown trigger {text:?}; {expected}"));
    };
    let value = value.trim();
    if value.is_empty() {
        return Err(format!("trigger {text:?} names nothing after the colon"));
    }
    match kind {
        "skill" => Ok(Trigger::Skill(value.trim_start_matches('/').to_owned())),
        "phase" => Ok(Trigger::Phase(value.to_owned())),
        "agent" => Ok(Trigger::Agent(value.to_owned())),
        "path" => PathGlob::new(value).map(|g| Trigger::Path(Box::new(g))),
        _ => Err(format!("unknown trigger {text:?}; {expected}")),
    }
}

/// A glob as `globset` reads it, `*` staying within one path component. It is checked when
/// read and compiled the first time a path is matched against it: most calls match no path, and
/// compiling is the costly part. `**/NAME` with a plain `NAME` (the default log rule's shape) is matched by name, never
/// compiled.
#[derive(Debug, Clone)]
pub struct PathGlob {
    glob: Glob,
    matcher: OnceLock<GlobMatcher>,
    /// `NAME` of a `**/NAME` glob whose `NAME` holds no special character.
    any_dir_name: Option<String>,
}

impl PathGlob {
    /// The glob `pattern`, or why it cannot be read.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let any_dir_name = pattern
            .strip_prefix("**/")
            .filter(|name| {
                !name.is_empty() && !name.contains(['*', '?', '[', ']', '{', '}', '\\', '/'])
            })
            .map(str::to_owned);
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map(|glob| Self {
                glob,
                matcher: OnceLock::new(),
                any_dir_name,
            })
            .map_err(|e| format!("bad glob {pattern:?}: {e}"))
    }

    /// As written.
    pub fn as_str(&self) -> &str {
        self.glob.glob()
    }

    /// Whether `path` matches.
    pub fn is_match(&self, path: impl AsRef<Path>) -> bool {
        let path = path.as_ref();
        if let Some(name) = &self.any_dir_name {
            return path
                .as_os_str()
                .as_encoded_bytes()
                .strip_suffix(name.as_bytes())
                .is_some_and(|head| head.is_empty() || head.ends_with(b"/"));
        }
        self.matcher
            .get_or_init(|| self.glob.compile_matcher())
            .is_match(path)
    }
}

/// A pack's name: `[A-Za-z0-9._-]`, used in the key its delivery is recorded under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackName(pub String);

impl<'de> Deserialize<'de> for PackName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if crate::primitives::paths::is_safe_name(&name) {
            Ok(Self(name))
        } else {
            Err(de::Error::custom(format!(
                "pack name {name:?} may hold only letters, digits, '.', '_' and '-'"
            )))
        }
    }
}

impl fmt::Display for PackName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One file of a pack.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackFile {
    /// Relative to the project (`~/` and absolute paths are taken as they are).
    pub path: NonEmpty,
    /// How it is sent (default `verbatim`).
    #[serde(default = "default_strategy")]
    pub strategy: Strategy,
    /// Under the budget, files of lower priority are reduced first (default 0).
    #[serde(default)]
    pub priority: i64,
    /// When to read it (shown with a mention).
    #[serde(default)]
    pub note: Option<String>,
}

/// A string that is not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonEmpty(pub String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.trim().is_empty() {
            Err(de::Error::custom("an empty path"))
        } else {
            Ok(Self(text))
        }
    }
}

/// One pack: a name, when it goes out, its budget and its files in read order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Pack {
    /// Its name (unique in its file; a project pack replaces a global one of the same name).
    pub name: PackName,
    /// When it is delivered.
    pub on: Trigger,
    /// Estimated tokens (characters / 4) the pack should stay within.
    #[serde(default)]
    pub budget_tokens: Option<u64>,
    /// The files, in the canonical read order.
    #[serde(default)]
    pub files: Vec<PackFile>,
}

/// A rule for growing logs: matching files go out as their last lines.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LogRule {
    /// Which files (relative to the project, or absolute).
    pub glob: PathGlob,
    /// How many lines of the end (default 100).
    #[serde(default = "default_tail")]
    pub tail_lines: usize,
}

fn default_tail() -> usize {
    DEFAULT_TAIL_LINES
}

impl<'de> Deserialize<'de> for PathGlob {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let pattern = String::deserialize(deserializer)?;
        Self::new(&pattern).map_err(de::Error::custom)
    }
}

impl LogRule {
    /// The built-in rules: `DIALOGUE.md` anywhere, its last 100 lines.
    pub fn defaults() -> Vec<Self> {
        PathGlob::new(DEFAULT_LOG_GLOB)
            .ok()
            .map(|glob| Self {
                glob,
                tail_lines: DEFAULT_TAIL_LINES,
            })
            .into_iter()
            .collect()
    }
}

/// The contents of one configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ConfigFile {
    /// The packs, names unique.
    #[serde(default, deserialize_with = "unique_packs")]
    pub packs: Vec<Pack>,
    /// `[start, end]` markers of an index.
    #[serde(default)]
    pub index_markers: Option<[NonEmpty; 2]>,
    /// Growing logs; absent means the default (`DIALOGUE.md`, 100 lines), `[]` none.
    #[serde(default)]
    pub logs: Option<Vec<LogRule>>,
}

fn unique_packs<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Pack>, D::Error> {
    struct Unique;
    impl<'de> Visitor<'de> for Unique {
        type Value = Vec<Pack>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of packs")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Pack>, A::Error> {
            let mut out: Vec<Pack> = Vec::new();
            let mut names = HashSet::new();
            while let Some(pack) = seq.next_element::<Pack>()? {
                if !names.insert(pack.name.0.clone()) {
                    return Err(de::Error::custom(format!(
                        "a second pack named {:?} (names are unique in a file)",
                        pack.name.0
                    )));
                }
                out.push(pack);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_seq(Unique)
}

/// Parse the text of the configuration file at `path`.
pub fn parse(path: &Path, text: &str) -> Result<ConfigFile, PacksError> {
    serde_json::from_str::<ConfigFile>(text).map_err(|e| {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
        PacksError::Invalid {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message,
        }
    })
}
