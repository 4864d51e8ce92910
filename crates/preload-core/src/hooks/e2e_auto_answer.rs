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
use std::time::SystemTime;

use serde_json::Value;

use crate::delivery::{chars, shorten};
use crate::env::{self, Env};
use crate::runner::{self, HookEvent, HookSpec};
use crate::{Context, HookError, HookInput, HookOutput};

/// Every reason starts with this tag.
pub const TAG: &str = "[E2E Auto-Answer]";
/// The tool it answers.
pub const TOOL: &str = "AskUserQuestion";

/// The binary.
pub const SPEC: HookSpec = HookSpec {
    name: "e2e-auto-answer",
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    if runner::answer_meta_flag("preload-e2e-auto-answer", SPEC.help, &args) {
        return ExitCode::SUCCESS;
    }
    if !enabled(&Env::from_process()) {
        return ExitCode::SUCCESS;
    }
    runner::run(SPEC.name, SPEC.event, handle)
}

/// True when the hook is switched on.
pub fn enabled(env: &Env) -> bool {
    env.get(env::E2E_AUTO_ANSWER).is_some()
}

/// How an option is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// The first option.
    First,
    /// The first option labelled `(Recommended)`, else the first.
    Recommended,
    /// A uniformly random option (a random non-empty subset for multi-select).
    Random,
}

impl Strategy {
    /// The strategy named by `value`; `first` for `1` and anything unknown.
    pub fn parse(value: &str) -> Self {
        match value.trim().to_ascii_lowercase().as_str() {
            "recommended" => Self::Recommended,
            "random" => Self::Random,
            _ => Self::First,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Recommended => "recommended",
            Self::Random => "random",
        }
    }
}

/// `SplitMix64`: a tiny, well-mixed generator; plenty for picking test answers.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number below `n` (0 when `n` is 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Reject the top partial range so every residue is equally likely.
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// The seed of `random`: `E2E_AUTO_ANSWER_SEED` as a number, or the FNV-1a hash of its text;
/// without it, the clock and the process id.
pub fn seed(env: &Env) -> u64 {
    if let Some(text) = env.get(env::E2E_AUTO_ANSWER_SEED) {
        return text.trim().parse().unwrap_or_else(|_| {
            text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            })
        });
    }
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    #[allow(clippy::cast_possible_truncation)] // the low bits are the varying ones
    let nanos = nanos as u64;
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// One question of `AskUserQuestion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The question text (else its header).
    pub text: String,
    /// The option labels, in order.
    pub labels: Vec<String>,
    /// `multiSelect: true`.
    pub multi: bool,
}

fn label_of(option: &Value) -> Option<String> {
    let label = match option {
        Value::String(s) => s.as_str(),
        Value::Object(map) => map.get("label")?.as_str()?,
        _ => return None,
    };
    let label = label.trim();
    (!label.is_empty()).then(|| label.to_owned())
}

/// The questions of `tool_input`, when every one of them has at least one labelled option.
pub fn questions(input: &HookInput) -> Option<Vec<Question>> {
    let list = input.tool_input()?.get("questions")?.as_array()?;
    if list.is_empty() {
        return None;
    }
    list.iter()
        .enumerate()
        .map(|(i, q)| {
            let q = q.as_object()?;
            let labels: Vec<String> = q
                .get("options")?
                .as_array()?
                .iter()
                .filter_map(label_of)
                .collect();
            if labels.is_empty() {
                return None;
            }
            let text = ["question", "header"]
                .iter()
                .find_map(|key| q.get(*key).and_then(Value::as_str).map(str::trim))
                .filter(|t| !t.is_empty())
                .map_or_else(|| format!("(question {})", i + 1), str::to_owned);
            Some(Question {
                text,
                labels,
                multi: q.get("multiSelect").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect()
}

/// The indexes of the options selected for `question`.
pub fn select(question: &Question, strategy: Strategy, rng: &mut SplitMix64) -> Vec<usize> {
    let n = question.labels.len();
    match strategy {
        Strategy::First => vec![0],
        Strategy::Recommended => vec![
            question
                .labels
                .iter()
                .position(|l| l.to_ascii_lowercase().contains("(recommended)"))
                .unwrap_or(0),
        ],
        Strategy::Random if !question.multi => vec![pick(rng, n)],
        Strategy::Random => random_subset(rng, n),
    }
}

fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    usize::try_from(rng.below(n as u64)).unwrap_or(0)
}

/// A uniformly drawn non-empty subset of `0..n`, in order.
fn random_subset(rng: &mut SplitMix64, n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    if n < 64 {
        // Masks 1..2^n-1 are exactly the non-empty subsets.
        let mask = 1 + rng.below((1u64 << n) - 1);
        return (0..n).filter(|i| mask & (1 << i) != 0).collect();
    }
    loop {
        let chosen: Vec<usize> = (0..n).filter(|_| rng.next_u64() & 1 == 1).collect();
        if !chosen.is_empty() {
            return chosen;
        }
    }
}

/// Caps that share `total` characters fairly among strings of `lengths`: short ones keep their
/// length, the long ones split what is left equally (water-filling).
pub fn fair_caps(lengths: &[usize], total: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| lengths[i]);
    let mut caps = vec![0; lengths.len()];
    let mut left = total;
    for (done, &i) in order.iter().enumerate() {
        let share = left / (order.len() - done);
        caps[i] = lengths[i].min(share);
        left -= caps[i];
    }
    caps
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
    let Some(questions) = questions(input) else {
        return Ok(HookOutput::Allow(None));
    };
    let strategy = Strategy::parse(value);
    let mut rng = SplitMix64::new(seed(&ctx.env));
    let answers: Vec<String> = questions
        .iter()
        .map(|q| {
            select(q, strategy, &mut rng)
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
    use serde_json::json;

    fn q(labels: &[&str], multi: bool) -> Question {
        Question {
            text: "Which?".into(),
            labels: labels.iter().map(|s| (*s).to_owned()).collect(),
            multi,
        }
    }

    #[test]
    fn strategies_parse_leniently() {
        assert_eq!(Strategy::parse("first"), Strategy::First);
        assert_eq!(Strategy::parse("1"), Strategy::First);
        assert_eq!(Strategy::parse("whatever"), Strategy::First);
        assert_eq!(Strategy::parse(" Recommended "), Strategy::Recommended);
        assert_eq!(Strategy::parse("RANDOM"), Strategy::Random);
    }

    #[test]
    fn splitmix_matches_reference_values() {
        // Reference sequence of SplitMix64 seeded with 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut rng = SplitMix64::new(7);
        let mut seen = [0u32; 5];
        for _ in 0..5_000 {
            seen[usize::try_from(rng.below(5)).unwrap()] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
        assert_eq!(rng.below(0), 0);
    }

    #[test]
    fn selections_follow_the_strategy() {
        let mut rng = SplitMix64::new(1);
        let plain = q(&["A", "B (Recommended)", "C"], false);
        assert_eq!(select(&plain, Strategy::First, &mut rng), vec![0]);
        assert_eq!(select(&plain, Strategy::Recommended, &mut rng), vec![1]);
        assert_eq!(
            select(&q(&["A", "B"], false), Strategy::Recommended, &mut rng),
            vec![0]
        );
        let multi = q(&["A", "B", "C"], true);
        assert_eq!(select(&multi, Strategy::First, &mut rng), vec![0]);
        let mut sizes = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let picked = select(&multi, Strategy::Random, &mut rng);
            assert!(!picked.is_empty() && picked.iter().all(|&i| i < 3));
            sizes.insert(picked.len());
        }
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), vec![1, 2, 3]);
        let wide: Vec<String> = (0..70).map(|i| i.to_string()).collect();
        let wide = Question {
            text: "w".into(),
            labels: wide,
            multi: true,
        };
        assert!(!select(&wide, Strategy::Random, &mut rng).is_empty());
    }

    #[test]
    fn fair_caps_keep_short_strings_whole() {
        assert_eq!(fair_caps(&[10, 100, 100], 110), vec![10, 50, 50]);
        assert_eq!(fair_caps(&[5, 5], 100), vec![5, 5]);
        assert_eq!(fair_caps(&[9, 9, 9], 0), vec![0, 0, 0]);
    }

    #[test]
    fn questions_need_labelled_options() {
        let input = |questions: serde_json::Value| {
            HookInput::from_value(
                json!({"tool_name": TOOL, "tool_input": {"questions": questions}}),
            )
        };
        let ok = questions(&input(
            json!([{"question": "Q?", "options": [{"label": "A"}, "B"], "multiSelect": true}]),
        ))
        .unwrap();
        assert_eq!(
            ok,
            vec![Question {
                text: "Q?".into(),
                labels: vec!["A".into(), "B".into()],
                multi: true
            }]
        );
        assert!(questions(&input(json!([]))).is_none());
        assert!(questions(&input(json!([{"question": "Q?", "options": []}]))).is_none());
        assert!(
            questions(&input(
                json!([{"question": "Q?", "options": [{"description": "x"}]}])
            ))
            .is_none()
        );
        assert!(questions(&input(json!("nope"))).is_none());
        let headed = questions(&input(json!([{"header": "Pick", "options": ["A"]}]))).unwrap();
        assert_eq!(headed[0].text, "Pick");
    }

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
