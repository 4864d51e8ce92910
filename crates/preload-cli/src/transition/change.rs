//! A phase change: the checks in order, then one locked write, then what the agent is told.
//!
//! The write records the new phase, its proof and the new phase's command files; the
//! description of the phase entered is [`describe`].

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value};

use super::proof::{self, Leaving, Proof, ProofError, ProofSchema};
use super::{
    Outcome, Rejection, TransitionError, Verdict, appended, find, judge, label_of, name_of,
    validate_phase,
};
use preload_core::mechanisms::context::Context;
use preload_core::mechanisms::session::STATE_FILE;
use preload_core::pipeline::preload::{self, Batch, Mode, Request};
use preload_core::primitives::clock;
use preload_core::primitives::delivery::Packer;
use preload_core::state::{self, Phase, Phases, State};

/// A `phase` call.
#[derive(Debug, Clone, Default)]
pub struct PhaseRequest {
    /// `"<label>: <name>"`.
    pub phase: String,
    /// `--user-approved REASON`.
    pub approval: Option<String>,
    /// What arrived on stdin.
    pub proof: Option<Proof>,
}

/// Move the session in `dir` to the requested phase, as `session.sh phase` does.
pub fn change_phase(ctx: &Context, dir: &Path, request: &PhaseRequest) -> Outcome {
    let mut out = Outcome::default();
    match change(ctx, dir, request, &mut out) {
        Ok((batch, description)) => {
            batch.log(ctx, true);
            out.stdout.push_str(&description);
        }
        Err(err) => out.refuse(&err.to_string()),
    }
    out
}

/// The checks and the locked write; the delivery batch and the description of the new phase.
fn change(
    ctx: &Context,
    dir: &Path,
    request: &PhaseRequest,
    out: &mut Outcome,
) -> Result<(Batch, String), TransitionError> {
    validate_phase(&request.phase)?;
    let path = dir.join(STATE_FILE);
    if !path.is_file() {
        return Err(TransitionError::NoSession {
            dir: dir.to_path_buf(),
        });
    }
    state::update(&path, state::Write::durable(ctx.lock_deadline()), |s| {
        transition(ctx, dir, request, s, out)
    })?
}

/// The decision and the write, inside the locked update; `Err` when refused (nothing changed).
fn transition(
    ctx: &Context,
    dir: &Path,
    request: &PhaseRequest,
    s: &mut State,
    out: &mut Outcome,
) -> Result<(Batch, String), TransitionError> {
    let phase = request.phase.as_str();
    let declared = s.phases().items().to_vec();
    let phases = Phases::of(&declared);
    let has_phases = !phases.is_empty();
    let current = s.current_phase().map_or("", Phase::as_str).to_owned();
    let mut new_phases = None;
    if has_phases {
        let judgement = judge(phases, &current, phase)?;
        match (judgement.verdict, &request.approval) {
            (Verdict::Sequential, _) => {}
            (Verdict::Append, _) => {
                new_phases = Some(appended(phases, label_of(phase), name_of(phase)));
            }
            (_, None) => {
                return Err(TransitionError::Unapproved(Box::new(Rejection {
                    judgement,
                    current,
                    requested: phase.to_owned(),
                    dir: dir.to_path_buf(),
                })));
            }
            (_, Some(reason)) => {
                out.say(&format!(
                    "Phase transition approved (non-sequential): {current} -> {phase}"
                ));
                out.say(&format!("  Approval: {reason}"));
            }
        }
    }
    let proof = request.proof.as_ref();
    if proof.is_some_and(|p| p.key_value_lines) {
        out.warn(proof::DEPRECATION);
    }
    if has_phases && !current.is_empty() {
        check_leaving(ctx, dir, phases, &current, phase, proof, out)?;
    }

    if let Some(list) = new_phases {
        s.set_phases(list);
    }
    let now = clock::iso_utc(ctx.now);
    let recorded = proof.filter(|p| p.is_recorded()).map(|p| &p.value);
    s.enter_phase(phase, &now, recorded);

    if !has_phases {
        return Ok((Batch::default(), format!("Phase: {phase}\n")));
    }
    let declared = s.phases().items().to_vec();
    let definition = find(Phases::of(&declared), label_of(phase));
    let commands = ctx.paths.directives.join("commands");
    let requests: Vec<Request> = definition
        .map(|d| proof::command_files(&commands, d))
        .unwrap_or_default()
        .into_iter()
        .map(|file| Request::new(file.to_string_lossy(), format!("session-phase({phase})")))
        .collect();
    let mut packer = Packer::new(ctx.budget);
    let batch = preload::apply(ctx, s, &requests, Mode::Queue, &mut packer);
    Ok((batch, describe(ctx, phase, definition)))
}

/// The proof check for leaving `current`, and the nudge when it declares none but others do.
fn check_leaving(
    ctx: &Context,
    dir: &Path,
    phases: Phases<'_>,
    current: &str,
    requested: &str,
    proof: Option<&Proof>,
    out: &mut Outcome,
) -> Result<(), ProofError> {
    let leaving_label = label_of(current);
    let staying = label_of(requested) == leaving_label;
    let definition = find(phases, leaving_label);
    let declared = definition
        .and_then(|d| d.get("proof"))
        .filter(|p| !matches!(p, Value::Null | Value::Bool(false)));
    if let (Some(definition), Some(declared)) = (definition, declared) {
        let declared = state::strings_of(Some(declared));
        if declared.is_empty() || staying {
            return Ok(());
        }
        let leaving = Leaving {
            phase: current,
            definition,
            declared,
        };
        let cmd_dir = ctx.paths.engine_directives.join("commands");
        return proof::check_leaving(&leaving, proof, &cmd_dir, dir, requested);
    }
    let others_declare = phases.iter().any(|p| {
        p.fields()
            .get("proof")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    });
    if !staying && others_declare {
        out.warn(&format!(
            "§CMD_UPDATE_PHASE: Phase '{current}' has no proof fields declared, but other \
             phases in this session declare proof. Consider adding proof fields to this phase."
        ));
    }
    Ok(())
}

/// What the agent is told on entering a phase: `Phase:`, then from its definition the
/// invariants, the numbered steps, the commands, the proof needed to leave it, the gate.
pub fn describe(ctx: &Context, phase: &str, definition: Option<&Map<String, Value>>) -> String {
    let mut out = format!("Phase: {phase}\n");
    let empty = Map::new();
    let def = definition.unwrap_or(&empty);
    let list = |key: &str| state::strings_of(def.get(key));
    let bullets = |out: &mut String, title: &str, items: &[String]| {
        if !items.is_empty() {
            let _ = writeln!(out, "{title}:");
            for item in items {
                let _ = writeln!(out, "  - {item}");
            }
        }
    };
    bullets(&mut out, "Invariants", &list("invariants"));
    let steps = list("steps");
    if !steps.is_empty() {
        let prefix = phase.split([':', ' ']).next().unwrap_or(phase);
        out.push_str("Steps:\n");
        for (k, step) in steps.iter().enumerate() {
            let _ = writeln!(out, "  {prefix}.{}: {step}", k + 1);
        }
    }
    bullets(&mut out, "Commands", &list("commands"));
    let cmd_dir = ctx.paths.engine_directives.join("commands");
    let proof = ProofSchema::of_phase(&cmd_dir, def, &list("proof"));
    let lines = proof.field_lines();
    if !lines.is_empty() {
        out.push_str("Proof required to leave this phase:\n");
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
    }
    let gate = def.get("gate").and_then(Value::as_bool).unwrap_or(true);
    let _ = writeln!(out, "Gate: {gate}");
    out
}
