//! `preload-e2e-auto-answer` (`PreToolUse`, `AskUserQuestion`; test sessions only): answers
//! the agent's questions so end-to-end protocol tests never stall on the interactive picker.
//!
//! Active only while `E2E_AUTO_ANSWER` is set; otherwise the binary prints nothing and exits
//! before reading stdin, so wiring it costs nothing in production. For `AskUserQuestion` it
//! picks an option of each question by strategy and denies the call with a reason that starts
//! `[E2E Auto-Answer]` and lists the selections, which the agent treats as the user's answer.
//!
//! Strategies (the value of `E2E_AUTO_ANSWER`): `first` (also `1` and any unknown value),
//! `recommended` (the first option labelled `(Recommended)`, else the first), `random`
//! (uniform; reproducible with `E2E_AUTO_ANSWER_SEED`). A multi-select question gets one option
//! under `first`/`recommended` and a uniformly drawn non-empty subset under `random`.

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::mechanisms::start_text::Chunk;
use crate::pipeline::runner;
use crate::primitives::choice::{self, Question, Strategy};
use crate::primitives::delivery::{chars, shorten};
use crate::primitives::env::{self, Env};
use crate::primitives::hook::{HookEvent, HookSpec};
use crate::primitives::layout::fair_caps;
use crate::primitives::rng::{self, SplitMix64};
use crate::{Context, HookError, HookInput, HookOutput};

/// Every reason starts with this tag.
pub const TAG: &str = "[E2E Auto-Answer]";
/// The tool it answers.
pub const TOOL: &str = "AskUserQuestion";

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "e2e-auto-answer",
    binary: "preload-e2e-auto-answer",
    event: HookEvent::PreToolUse,
    help:
        "preload-e2e-auto-answer: PreToolUse hook (matcher AskUserQuestion), for test sessions only.

Answers AskUserQuestion so end-to-end tests never stall on the picker: it selects an option of
each question and denies the call with a reason starting [E2E Auto-Answer] that lists the
selections; the agent continues with them as the user's choices. Other tools are allowed.

Off unless E2E_AUTO_ANSWER is set: then it exits at once, reading nothing, printing nothing.

Env: E2E_AUTO_ANSWER   first (also 1, and any unknown value) | recommended | random
     E2E_AUTO_ANSWER_SEED   makes random reproducible (a number, or any text)
     PRELOAD_OUTPUT_BUDGET, PRELOAD_BUDGET_MS, HOOK_DEBUG.
Reads stdin: tool_name, tool_input.questions[].{question, header, options[].label, multiSelect}.
Files: none.",
};

/// Entry point of the binary: off (no `E2E_AUTO_ANSWER`) means no stdin read and no output.
pub fn main() -> ExitCode {
    let args = crate::primitives::system::entry::args();
    if runner::answer_meta_flag("preload-e2e-auto-answer", SPEC.help, args) {
        return ExitCode::SUCCESS;
    }
    if !enabled(&Env::from_process()) {
        return ExitCode::SUCCESS;
    }
    runner::run(
        SPEC.event,
        &[runner::Policy::only(SPEC.name, SPEC.event, handle)],
    )
}

/// True when the hook is switched on.
pub fn enabled(env: &Env) -> bool {
    env.get(env::E2E_AUTO_ANSWER).is_some()
}

/// The policy of a wiring row (no arguments): off without `E2E_AUTO_ANSWER`, where it says
/// nothing, as its own binary does.
pub fn policy(args: &[&str], _: Option<Chunk>) -> Option<runner::Policy> {
    args.is_empty().then(|| {
        runner::Policy::only(SPEC.name, SPEC.event, |input, ctx| {
            if enabled(&ctx.env) {
                handle(input, ctx)
            } else {
                Ok(HookOutput::Silent)
            }
        })
    })
}

const ANSWER_PREFIX: &str = "   -> ";

fn render(strategy: Strategy, entries: &[(String, String)]) -> String {
    let mut out = format!(
        "{TAG} User selections (auto, strategy {}):\n",
        strategy.name()
    );
    for (i, (question, answer)) in entries.iter().enumerate() {
        let _ = writeln!(out, "{}. {question}\n{ANSWER_PREFIX}{answer}", i + 1);
    }
    out.push_str(
        "Treat these as the user's choices to the questions above and continue execution; do not ask them again.",
    );
    out
}

/// The reason for `questions` with their `answers` (labels joined), within `budget`
/// characters: question texts are shortened fairly first, then, only if still needed, the
/// answers.
pub fn reason(
    strategy: Strategy,
    questions: &[Question],
    answers: &[String],
    budget: usize,
) -> String {
    let full: Vec<(String, String)> = questions
        .iter()
        .map(|q| q.text.clone())
        .zip(answers.iter().cloned())
        .collect();
    let text = render(strategy, &full);
    if chars(&text) <= budget {
        return text;
    }
    let bare: Vec<(String, String)> = full
        .iter()
        .map(|_| (String::new(), String::new()))
        .collect();
    let frame = chars(&render(strategy, &bare));
    let q_lens: Vec<usize> = full.iter().map(|(q, _)| chars(q)).collect();
    let a_lens: Vec<usize> = full.iter().map(|(_, a)| chars(a)).collect();
    let a_total: usize = a_lens.iter().sum();
    let room = budget.saturating_sub(frame);
    let (q_caps, a_caps) = if a_total <= room {
        (fair_caps(&q_lens, room - a_total), a_lens)
    } else {
        // Answers alone overflow: keep a little of each question, share the rest.
        let q_caps = fair_caps(&q_lens, room / 4);
        let q_used: usize = q_caps.iter().sum();
        (q_caps, fair_caps(&a_lens, room - q_used))
    };
    let cut: Vec<(String, String)> = full
        .iter()
        .enumerate()
        .map(|(i, (q, a))| (shorten(q, q_caps[i]), shorten(a, a_caps[i])))
        .collect();
    shorten(&render(strategy, &cut), budget)
}

/// Answer `AskUserQuestion`; allow everything else and anything malformed.
pub fn handle(input: &HookInput, ctx: &Context) -> Result<HookOutput, HookError> {
    let Some(value) = ctx.env.get(env::E2E_AUTO_ANSWER) else {
        return Ok(HookOutput::Allow(None));
    };
    if input.tool_name() != Some(TOOL) {
        return Ok(HookOutput::Allow(None));
    }
    let Some(questions) = choice::questions(input) else {
        return Ok(HookOutput::Allow(None));
    };
    let strategy = Strategy::parse(value);
    let mut rng = SplitMix64::new(rng::seed_of(ctx.env.get(env::E2E_AUTO_ANSWER_SEED)));
    let answers: Vec<String> = questions
        .iter()
        .map(|q| {
            choice::select(q, strategy, &mut rng)
                .into_iter()
                .map(|i| q.labels[i].as_str())
                .collect::<Vec<_>>()
                .join("; ")
        })
        .collect();
    Ok(HookOutput::Deny(reason(
        strategy, &questions, &answers, ctx.budget,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_fits_the_budget_and_keeps_every_answer() {
        let long = "why ".repeat(1_000);
        let qs: Vec<Question> = (0..30)
            .map(|i| Question {
                text: format!("{i}: {long}"),
                labels: vec![format!("label-{i}")],
                multi: false,
            })
            .collect();
        let answers: Vec<String> = qs.iter().map(|q| q.labels[0].clone()).collect();
        let text = reason(Strategy::First, &qs, &answers, 2_000);
        assert!(chars(&text) <= 2_000, "{}", chars(&text));
        for a in &answers {
            assert!(text.contains(&format!("{ANSWER_PREFIX}{a}\n")), "{a} kept");
        }
        let tiny = reason(Strategy::First, &qs, &answers, 200);
        assert!(chars(&tiny) <= 200);
        assert!(tiny.starts_with(TAG));
    }
}
