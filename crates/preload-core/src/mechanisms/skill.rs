//! SKILL.md: its JSON block, phase lookup by label, and the one phase-command resolver every
//! hook uses (`resolve_phase_cmds`).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::primitives::memo::Memo;
use crate::primitives::paths::EnginePaths;
use crate::state::fields;
use crate::state::refs;
use crate::state::{Phases, SkillMode, State};

/// Template fields of a skill, in delivery order.
pub const TEMPLATE_FIELDS: [&str; 3] = [
    fields::LOG_TEMPLATE,
    fields::DEBRIEF_TEMPLATE,
    fields::PLAN_TEMPLATE,
];

/// Fields of a skill that name a template file (relative to the skill folder, or absolute).
pub const TEMPLATE_PATH_FIELDS: [&str; 5] = [
    fields::LOG_TEMPLATE,
    fields::DEBRIEF_TEMPLATE,
    fields::PLAN_TEMPLATE,
    fields::REQUEST_TEMPLATE,
    fields::RESPONSE_TEMPLATE,
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

/// A skill's JSON definition: the members the hooks read, typed when written in their shape;
/// every other member (and one written in another shape) as written, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Definition {
    /// `phases`, when an array.
    pub phases: Option<Vec<Value>>,
    /// The template fields ([`TEMPLATE_PATH_FIELDS`]) that are text: field and path, in order.
    pub templates: Vec<(String, String)>,
    /// `modes`, when an object: each mode by id, in order.
    pub modes: Option<Vec<(String, SkillMode)>>,
    /// Every other member, and one of the above written in another shape, as written, in order.
    pub rest: Map<String, Value>,
}

impl Definition {
    /// The definition a JSON block's members make.
    fn of(members: Map<String, Value>) -> Self {
        let mut out = Self::default();
        for (key, value) in members {
            match value {
                Value::Array(items) if key == fields::PHASES => out.phases = Some(items),
                Value::String(path) if TEMPLATE_PATH_FIELDS.contains(&key.as_str()) => {
                    out.templates.push((key, path));
                }
                Value::Object(modes) if key == fields::MODES => {
                    out.modes = Some(
                        modes
                            .into_iter()
                            .map(|(id, mode)| (id, SkillMode::of(mode)))
                            .collect(),
                    );
                }
                value => {
                    out.rest.insert(key, value);
                }
            }
        }
        out
    }

    /// The path the template field `field` holds, when it is text.
    pub fn template(&self, field: &str) -> Option<&str> {
        self.templates
            .iter()
            .find(|(key, _)| key == field)
            .map(|(_, path)| path.as_str())
    }
}

/// The skill's definition: the first JSON object block with `phases`, else the first object.
pub fn definition(text: &str) -> Option<Definition> {
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
    objects
        .into_iter()
        .nth(with_phases.unwrap_or(0))
        .map(Definition::of)
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
    pub definition: Definition,
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
        Phases::of(self.definition.phases.as_deref().unwrap_or_default())
    }

    /// The template files that exist, resolved against the skill folder.
    pub fn templates(&self) -> Vec<PathBuf> {
        templates_of(|field| self.definition.template(field), &self.dir)
    }
}

/// Template files named by `logTemplate`, `debriefTemplate`, `planTemplate` as `template`
/// reads them (relative to `skill_dir`, or absolute), kept when they exist.
pub fn templates_of<'a>(
    template: impl Fn(&str) -> Option<&'a str>,
    skill_dir: &Path,
) -> Vec<PathBuf> {
    TEMPLATE_FIELDS
        .iter()
        .filter_map(|f| template(f).filter(|s| !s.is_empty()))
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
/// skill's templates (as `template` reads them). One resolver for Phase 0 (templates hook) and
/// Phase N (phase commands).
pub fn resolve_phase_cmds<'a>(
    paths: &EnginePaths,
    phases: Phases<'_>,
    label: &str,
    template: impl Fn(&str) -> Option<&'a str>,
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
    for template in templates_of(template, skill_dir) {
        if !out.contains(&template) {
            out.push(template);
        }
    }
    out
}

/// True when `state` names at least one template.
fn has_template_field(state: &State) -> bool {
    TEMPLATE_FIELDS
        .iter()
        .any(|f| state.str(f).is_some_and(|s| !s.is_empty()))
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
    let skill_dir = paths.skills.join(name);
    let mut out = if has_template_field(state) {
        resolve_phase_cmds(paths, phases, label, |f| state.str(f), &skill_dir)
    } else {
        let skill = skill();
        let template = |f: &str| skill.and_then(|s| s.definition.template(f));
        resolve_phase_cmds(paths, phases, label, template, &skill_dir)
    };
    if let Some(chosen) = state.chosen_mode() {
        // The state's own modes, else (none written there) the skill's.
        let modes = state
            .modes()
            .map(Cow::Owned)
            .or_else(|| skill().and_then(|s| s.definition.modes.as_deref().map(Cow::Borrowed)));
        if let Some(modes) = modes {
            for file in mode_files(&modes, chosen, &skill_dir) {
                if !out.contains(&file) {
                    out.push(file);
                }
            }
        }
    }
    out
}

/// The files of mode `chosen` (matched by id or label, in any case) of a skill's `modes`, that
/// exist: its own `file`, after every other mode's when it is `custom` (the engine's skills
/// have a custom mode read the named modes first). Relative files are in `skill_dir`.
pub fn mode_files(modes: &[(String, SkillMode)], chosen: &str, skill_dir: &Path) -> Vec<PathBuf> {
    let Some((id, mode)) = modes.iter().find(|(id, mode)| {
        id.eq_ignore_ascii_case(chosen)
            || mode
                .label
                .as_deref()
                .is_some_and(|l| l.eq_ignore_ascii_case(chosen))
    }) else {
        return Vec::new();
    };
    let file_of = |mode: &SkillMode| {
        let rel = mode.file.as_deref().filter(|f| !f.is_empty())?;
        let path = if rel.starts_with('/') {
            PathBuf::from(rel)
        } else {
            skill_dir.join(rel)
        };
        path.is_file().then_some(path)
    };
    let mut chosen_modes: Vec<&SkillMode> = Vec::new();
    if id.eq_ignore_ascii_case("custom") {
        chosen_modes.extend(
            modes
                .iter()
                .filter(|(other, _)| other != id)
                .map(|(_, m)| m),
        );
    }
    chosen_modes.push(mode);
    chosen_modes.into_iter().filter_map(file_of).collect()
}

#[cfg(test)]
mod tests;
