//! SKILL.md: its JSON block, phase lookup by label, and the one phase-command resolver every
//! hook uses (`resolve_phase_cmds`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::primitives::memo::Memo;
use crate::primitives::paths::EnginePaths;
use crate::state::fields;
use crate::state::refs;
use crate::state::{Phases, State};

/// Template fields of a skill, in delivery order.
pub const TEMPLATE_FIELDS: [&str; 3] = [
    fields::LOG_TEMPLATE,
    fields::DEBRIEF_TEMPLATE,
    fields::PLAN_TEMPLATE,
];

/// Every fenced `json` block of a Markdown text that parses, in order: from a line that is
/// `` ```json `` (trailing white space allowed) to the next line that is `` ``` ``; a block left
/// open is not one. Fences are searched for (`refs::find_fence`), so a long SKILL.md is not
/// walked line by line.
pub fn json_blocks(text: &str) -> Vec<Value> {
    const OPEN: &str = "```json";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = refs::find_fence(&text[from..]) {
        let at = from + found;
        let (line, mut next) = line_at(text, at);
        from = next;
        if (at > 0 && text.as_bytes()[at - 1] != b'\n') || line.trim_end() != OPEN {
            continue;
        }
        let mut body = String::new();
        while next < text.len() {
            let (line, after) = line_at(text, next);
            next = after;
            if line.trim_end() == "```" {
                if let Ok(value) = serde_json::from_str::<Value>(&body) {
                    out.push(value);
                }
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        from = next;
    }
    out
}

/// The line that starts at byte `at` of `text`, without its `\n` or `\r\n` (as `str::lines`
/// gives it), and where the next line starts.
fn line_at(text: &str, at: usize) -> (&str, usize) {
    let rest = &text[at..];
    match rest.find('\n') {
        Some(end) => {
            let line = &rest[..end];
            (line.strip_suffix('\r').unwrap_or(line), at + end + 1)
        }
        None => (rest, text.len()),
    }
}

/// The skill's definition: the first JSON object block with `phases`, else the first object.
pub fn definition(text: &str) -> Option<Map<String, Value>> {
    let objects: Vec<Map<String, Value>> = json_blocks(text)
        .into_iter()
        .filter_map(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .collect();
    let with_phases = objects
        .iter()
        .position(|m| m.get(fields::PHASES).is_some_and(Value::is_array));
    objects.into_iter().nth(with_phases.unwrap_or(0))
}

/// A skill on disk.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Its name (`implement`).
    pub name: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Its SKILL.md.
    pub file: PathBuf,
    /// Its JSON definition (empty when it has none).
    pub definition: Map<String, Value>,
}

/// True for a usable skill name: `[A-Za-z0-9._-]`, no traversal.
pub fn is_valid_name(name: &str) -> bool {
    crate::primitives::paths::is_safe_name(name)
}

impl Skill {
    /// Load `~/.claude/skills/<name>/SKILL.md`; `None` when the name is unsafe or the file missing.
    pub fn load(paths: &EnginePaths, name: &str) -> Option<Self> {
        if !is_valid_name(name) {
            return None;
        }
        let file = paths.skill_file(name);
        let text = crate::primitives::file::read_text(&file, crate::state::MAX_STATE_BYTES)?;
        Some(Self {
            name: name.to_owned(),
            dir: paths.skills.join(name),
            definition: definition(&text).unwrap_or_default(),
            file,
        })
    }
}

/// The skills one call loaded, each SKILL.md read and parsed once however many steps of the
/// call ask for it (a long one costs half a million instructions to parse).
#[derive(Debug, Default)]
pub struct Skills(Memo<String, Option<Arc<Skill>>>);

impl Skills {
    /// [`Skill::load`], read at the first ask of this call.
    pub fn load(&self, paths: &EnginePaths, name: &str) -> Option<Arc<Skill>> {
        self.0
            .get_or_keep(name, || Skill::load(paths, name).map(Arc::new))
    }
}

impl Skill {
    /// The declared phases (none when `phases` is absent).
    pub fn phases(&self) -> Phases<'_> {
        Phases::declared_in(&self.definition)
    }

    /// The template files that exist, resolved against the skill folder.
    pub fn templates(&self) -> Vec<PathBuf> {
        templates_of(&self.definition, &self.dir)
    }
}

/// Template files named by `logTemplate`, `debriefTemplate`, `planTemplate` of `fields`
/// (relative to `skill_dir`, or absolute), kept when they exist.
pub fn templates_of(fields: &Map<String, Value>, skill_dir: &Path) -> Vec<PathBuf> {
    TEMPLATE_FIELDS
        .iter()
        .filter_map(|f| {
            fields
                .get(*f)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .map(|rel| {
            if rel.starts_with('/') {
                PathBuf::from(rel)
            } else {
                skill_dir.join(rel)
            }
        })
        .filter(|p| p.is_file())
        .collect()
}

/// `resolve_phase_cmds`: the existing command files of phase `label` in `phases`, then the
/// skill's templates. One resolver for Phase 0 (templates hook) and Phase N (phase commands).
pub fn resolve_phase_cmds(
    paths: &EnginePaths,
    phases: Phases<'_>,
    label: &str,
    template_fields: &Map<String, Value>,
    skill_dir: &Path,
) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = phases
        .find(label)
        .map(|phase| {
            phase
                .command_names()
                .iter()
                .map(|n| paths.command_file(n))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    for template in templates_of(template_fields, skill_dir) {
        if !out.contains(&template) {
            out.push(template);
        }
    }
    out
}

/// True when `fields` names at least one template.
fn has_template_field(fields: &Map<String, Value>) -> bool {
    TEMPLATE_FIELDS.iter().any(|f| {
        fields
            .get(*f)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    })
}

/// `resolve_phase_cmds` for a session or seed state: the skill is the state's `skill`, the
/// phases are the state's `phases` when present (else the skill's SKILL.md), the templates the
/// state's template fields when present (else the skill's). Empty without a usable skill. The
/// SKILL.md is loaded only for what the state lacks: a state the engine activated holds its
/// phases and templates.
pub fn session_phase_cmds(
    paths: &EnginePaths,
    skills: &Skills,
    state: &State,
    label: &str,
) -> Vec<PathBuf> {
    let Some(name) = state.str(fields::SKILL) else {
        return Vec::new();
    };
    if !is_valid_name(name) {
        return Vec::new();
    }
    let loaded = std::cell::OnceCell::new();
    let skill = || loaded.get_or_init(|| skills.load(paths, name)).as_deref();
    let declared = state.phases();
    let phases = if declared.is_empty() {
        skill().map_or_else(Phases::default, Skill::phases)
    } else {
        declared
    };
    let empty = Map::new();
    let fields = if has_template_field(state.map()) {
        state.map()
    } else {
        skill().map_or(&empty, |s| &s.definition)
    };
    let skill_dir = paths.skills.join(name);
    let mut out = resolve_phase_cmds(paths, phases, label, fields, &skill_dir);
    if let Some(chosen) = chosen_mode(state.map()) {
        let modes = state
            .get(fields::MODES)
            .or_else(|| skill().and_then(|s| s.definition.get(fields::MODES)));
        if let Some(Value::Object(modes)) = modes {
            for file in mode_files(modes, chosen, &skill_dir) {
                if !out.contains(&file) {
                    out.push(file);
                }
            }
        }
    }
    out
}

/// The mode a session chose: the latest `proof.mode` in `phaseHistory` (the engine's skills
/// prove the mode when they leave the phase that selects it), else the state's own `mode`.
pub fn chosen_mode(state: &Map<String, Value>) -> Option<&str> {
    let proven = state
        .get(fields::PHASE_HISTORY)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .rev()
        .find_map(|entry| entry.get(fields::PROOF)?.get(fields::MODE)?.as_str());
    proven
        .or_else(|| state.get(fields::MODE).and_then(Value::as_str))
        .map(str::trim)
        .filter(|m| !m.is_empty())
}

/// The files of mode `chosen` (matched by id or label, in any case) of a skill's `modes`, that
/// exist: its own `file`, after every other mode's when it is `custom` (the engine's skills
/// have a custom mode read the named modes first). Relative files are in `skill_dir`.
pub fn mode_files(modes: &Map<String, Value>, chosen: &str, skill_dir: &Path) -> Vec<PathBuf> {
    let Some((id, _)) = modes.iter().find(|(id, mode)| {
        id.eq_ignore_ascii_case(chosen)
            || mode
                .get(fields::MODE_LABEL)
                .and_then(Value::as_str)
                .is_some_and(|l| l.eq_ignore_ascii_case(chosen))
    }) else {
        return Vec::new();
    };
    let file_of = |mode: &Value| {
        let rel = mode
            .get(fields::MODE_FILE)?
            .as_str()
            .filter(|f| !f.is_empty())?;
        let path = if rel.starts_with('/') {
            PathBuf::from(rel)
        } else {
            skill_dir.join(rel)
        };
        path.is_file().then_some(path)
    };
    let mut chosen_ids: Vec<&String> = Vec::new();
    if id.eq_ignore_ascii_case("custom") {
        chosen_ids.extend(modes.keys().filter(|other| *other != id));
    }
    chosen_ids.push(id);
    chosen_ids
        .into_iter()
        .filter_map(|id| modes.get(id.as_str()).and_then(file_of))
        .collect()
}

#[cfg(test)]
mod tests;
